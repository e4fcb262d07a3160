#include "model_spec.h"

#include "pkbw/core/error.h"

namespace pkbw::generate {

ModelSpec parse_model_spec(const std::string& text) {
    auto slash = text.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == text.size())
        throw Error("--model '" + text +
                    "': expected PROVIDER/MODEL (google, gemini, anthropic, openai, together, vllm, local)");
    ModelSpec spec;
    spec.provider = text.substr(0, slash);
    spec.model = text.substr(slash + 1);
    if (spec.provider == "google" || spec.provider == "gemini") {
        spec.provider = "google"; // PKB's folder token
        spec.wire = WireFormat::GeminiGenerate;
        spec.default_base_url = "https://generativelanguage.googleapis.com/v1beta";
        spec.key_variable = "GEMINI_API_KEY";
        spec.key_fallback = "GOOGLE_API_KEY";
    } else if (spec.provider == "anthropic") {
        spec.wire = WireFormat::AnthropicMessages;
        spec.default_base_url = "https://api.anthropic.com/v1";
        spec.key_variable = "ANTHROPIC_API_KEY";
    } else if (spec.provider == "openai") {
        spec.default_base_url = "https://api.openai.com/v1";
        spec.key_variable = "OPENAI_API_KEY";
    } else if (spec.provider == "together") {
        spec.default_base_url = "https://api.together.xyz/v1";
        spec.key_variable = "TOGETHER_API_KEY";
    } else if (spec.provider == "vllm" || spec.provider == "local") {
        // Any OpenAI-compatible server; the key is optional (PKBW_LOCAL_API_KEY when it wants one).
        spec.key_variable = "PKBW_LOCAL_API_KEY";
    } else {
        throw Error("--model '" + text + "': unknown provider '" + spec.provider +
                    "' (google, gemini, anthropic, openai, together, vllm, local)");
    }
    return spec;
}

std::string wire_format_name(WireFormat wire) {
    switch (wire) {
    case WireFormat::OpenAiChat:
        return "openai-chat";
    case WireFormat::AnthropicMessages:
        return "anthropic-messages";
    case WireFormat::GeminiGenerate:
        return "gemini-generate";
    }
    return "?";
}

} // namespace pkbw::generate
