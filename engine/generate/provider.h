// The three wire formats pkbw speaks (docs/generate.md "Providers"): OpenAI-compatible chat
// completions (OpenAI, Together, vLLM, any local server), Anthropic Messages and Gemini
// generateContent; each as a plain request or streamed as server-sent events.
#pragma once

#include "http_client.h"
#include "model_spec.h"

#include <optional>
#include <string>
#include <vector>

namespace pkbw::generate {

struct ProviderSettings {
    std::string base_url;           // without a trailing '/'
    int max_tokens = 0;             // 0: the model's cap from the table (or 32768)
    bool stream = false;            // forced on for Anthropic above 21333 tokens (docs)
    std::optional<std::string> key; // from the environment; never recorded
};

// The output-token cap pkbw knows for a model (from the providers' documentation, as remembered
// when this was written; docs/generate.md), or nullopt.
std::optional<int> known_output_cap(const ModelSpec& model);
// The tokens asked for: the request (or the cap, or 32768), clamped to the known cap.
int effective_max_tokens(const ModelSpec& model, int requested);
// Whether a request is streamed: asked for, or required (Anthropic's long non-streamed requests).
bool should_stream(const ModelSpec& model, int max_tokens, bool requested);

// USD per million input / output tokens for an estimate; nullopt when the model is not in the table.
std::optional<std::pair<double, double>> price_per_million(const ModelSpec& model);

struct ProviderRequest {
    HttpRequest http;            // url (no key in it), headers (the key), body
    std::string body_for_record; // == http.body; kept separate so nothing else leaks into the store
    bool streamed = false;
};

struct ChatTurn {
    std::string role; // user | assistant
    std::string text;
};

// A conversation: the system message and the turns so far (the last one the user's).
ProviderRequest build_request(const ModelSpec& model, const ProviderSettings& settings,
                              const std::string& system, const std::vector<ChatTurn>& turns);

struct ModelReply {
    std::string text;
    std::string finish_reason; // the provider's own word
    bool truncated = false;    // stopped at the token limit
    bool refused = false;      // stopped by a safety filter / refusal
    std::optional<std::int64_t> input_tokens, output_tokens;
    std::string error; // a reply that could not be read ("" when fine)
};

// Reads a complete (non-streamed) JSON body, or the concatenated SSE events of a streamed one.
ModelReply parse_reply(const ModelSpec& model, const std::string& body, bool streamed);

} // namespace pkbw::generate
