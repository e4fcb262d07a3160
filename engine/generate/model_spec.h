// `--model PROVIDER/MODEL` and the wire format each provider speaks (docs/generate.md "Providers").
#pragma once

#include <optional>
#include <string>

namespace pkbw::generate {

enum class WireFormat { OpenAiChat, AnthropicMessages, GeminiGenerate };

struct ModelSpec {
    std::string provider; // the folder token: google, together, anthropic, openai, local, ...
    std::string model;    // the provider's model id, may hold '/' ("zai-org/GLM-5.1")
    WireFormat wire = WireFormat::OpenAiChat;
    std::string default_base_url; // "" for local: --base-url is then required
    std::string key_variable;     // environment variable holding the key ("" : none needed)
    std::string key_fallback;     // a second variable (GOOGLE_API_KEY for google)
};

// "anthropic/claude-sonnet-4-20250514", "together/zai-org/GLM-5.1", "local/qwen": the first '/'
// separates the provider. Throws pkbw::Error naming the flag for an unknown provider or a missing '/'.
ModelSpec parse_model_spec(const std::string& text);

std::string wire_format_name(WireFormat wire);

} // namespace pkbw::generate
