#include "provider.h"

#include <nlohmann/json.hpp>
#include <sstream>

namespace pkbw::generate {

using nlohmann::json;

namespace {

bool starts(const std::string& s, const char* prefix) {
    return s.rfind(prefix, 0) == 0;
}

// OpenAI's reasoning models take max_completion_tokens and reject max_tokens.
bool uses_completion_tokens(const ModelSpec& model) {
    return model.provider == "openai" && (starts(model.model, "o1") || starts(model.model, "o3") ||
                                          starts(model.model, "o4") || starts(model.model, "gpt-5"));
}

} // namespace

std::optional<int> known_output_cap(const ModelSpec& model) {
    const std::string& m = model.model;
    if (model.wire == WireFormat::AnthropicMessages) {
        if (starts(m, "claude-opus-4"))
            return 32000;
        if (starts(m, "claude-sonnet-4"))
            return 64000;
        return 8192;
    }
    if (model.provider == "openai") {
        if (starts(m, "gpt-4o"))
            return 16384;
        if (starts(m, "gpt-4.1"))
            return 32768;
        if (starts(m, "o3") || starts(m, "o4"))
            return 100000;
    }
    if (model.wire == WireFormat::GeminiGenerate)
        return 65536;
    return std::nullopt;
}

int effective_max_tokens(const ModelSpec& model, int requested) {
    auto cap = known_output_cap(model);
    int tokens = requested > 0 ? requested : (cap ? *cap : 32768);
    return cap ? std::min(tokens, *cap) : tokens;
}

bool should_stream(const ModelSpec& model, int max_tokens, bool requested) {
    // Anthropic refuses non-streamed requests expected to run past 10 minutes; its SDKs draw the line
    // at about 21,333 output tokens.
    return requested || (model.wire == WireFormat::AnthropicMessages && max_tokens > 21333);
}

std::optional<std::pair<double, double>> price_per_million(const ModelSpec& model) {
    const std::string& m = model.model;
    if (starts(m, "claude-opus-4"))
        return std::pair{15.0, 75.0};
    if (starts(m, "claude-sonnet-4"))
        return std::pair{3.0, 15.0};
    if (starts(m, "gpt-4o"))
        return std::pair{2.5, 10.0};
    if (starts(m, "gpt-4.1"))
        return std::pair{2.0, 8.0};
    if (starts(m, "o3"))
        return std::pair{2.0, 8.0};
    if (starts(m, "gemini-2.5-pro") || starts(m, "gemini-3-pro"))
        return std::pair{1.25, 10.0};
    if (starts(m, "gemini-2.5-flash") || starts(m, "gemini-3-flash"))
        return std::pair{0.3, 2.5};
    if (model.provider == "local" || model.provider == "vllm")
        return std::pair{0.0, 0.0}; // your own server
    return std::nullopt;
}

ProviderRequest build_request(const ModelSpec& model, const ProviderSettings& settings,
                              const std::string& system, const std::vector<ChatTurn>& turns) {
    ProviderRequest out;
    const int max_tokens = effective_max_tokens(model, settings.max_tokens);
    out.streamed = should_stream(model, max_tokens, settings.stream);
    json body;
    std::vector<std::string> headers{"Content-Type: application/json"};
    switch (model.wire) {
    case WireFormat::OpenAiChat:
        out.http.url = settings.base_url + "/chat/completions";
        body["model"] = model.model;
        body["messages"] = json::array({{{"role", "system"}, {"content", system}}});
        for (const auto& turn : turns)
            body["messages"].push_back({{"role", turn.role}, {"content", turn.text}});
        body[uses_completion_tokens(model) ? "max_completion_tokens" : "max_tokens"] = max_tokens;
        if (model.provider == "together")
            body["reasoning"] = {{"enabled", false}}; // as PKB asks: the answer in `content`
        if (out.streamed) {
            body["stream"] = true;
            body["stream_options"] = {{"include_usage", true}};
        }
        if (settings.key)
            headers.push_back("Authorization: Bearer " + *settings.key);
        break;
    case WireFormat::AnthropicMessages:
        out.http.url = settings.base_url + "/messages";
        body["model"] = model.model;
        body["max_tokens"] = max_tokens;
        body["system"] = system;
        body["messages"] = json::array();
        for (const auto& turn : turns)
            body["messages"].push_back({{"role", turn.role}, {"content", turn.text}});
        if (out.streamed)
            body["stream"] = true;
        headers.push_back("anthropic-version: 2023-06-01");
        if (settings.key)
            headers.push_back("x-api-key: " + *settings.key);
        break;
    case WireFormat::GeminiGenerate:
        out.http.url = settings.base_url + "/models/" + model.model +
                       (out.streamed ? ":streamGenerateContent?alt=sse" : ":generateContent");
        body["systemInstruction"] = {{"parts", json::array({{{"text", system}}})}};
        body["contents"] = json::array();
        for (const auto& turn : turns) // Gemini calls the assistant "model"
            body["contents"].push_back({{"role", turn.role == "assistant" ? "model" : "user"},
                                        {"parts", json::array({{{"text", turn.text}}})}});
        body["generationConfig"] = {{"maxOutputTokens", max_tokens}};
        if (settings.key)
            headers.push_back("x-goog-api-key: " + *settings.key); // a header, so the URL holds no key
        break;
    }
    out.http.headers = std::move(headers);
    out.http.body = body.dump();
    out.body_for_record = out.http.body;
    return out;
}

namespace {

std::optional<std::int64_t> opt_int(const json& j, const char* key) {
    if (j.is_object() && j.contains(key) && j[key].is_number_integer())
        return j[key].get<std::int64_t>();
    return std::nullopt;
}

// Applies one JSON object (a whole reply, or one streamed event) to `reply`.
void apply_openai(const json& j, ModelReply& reply, bool delta) {
    if (j.contains("error")) {
        reply.error =
            j["error"].is_object() ? j["error"].value("message", j["error"].dump()) : j["error"].dump();
        return;
    }
    if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
        const json& c = j["choices"][0];
        const json& m = delta ? c.value("delta", json::object()) : c.value("message", json::object());
        if (m.contains("content") && m["content"].is_string())
            reply.text += m["content"].get<std::string>();
        if (c.contains("finish_reason") && c["finish_reason"].is_string())
            reply.finish_reason = c["finish_reason"].get<std::string>();
        if (m.value("refusal", json()).is_string())
            reply.refused = true;
    }
    if (j.contains("usage") && j["usage"].is_object()) {
        reply.input_tokens = opt_int(j["usage"], "prompt_tokens");
        reply.output_tokens = opt_int(j["usage"], "completion_tokens");
    }
}

void apply_anthropic(const json& j, ModelReply& reply) {
    std::string type = j.value("type", "");
    if (type == "error" || j.contains("error")) {
        const json& e = j.contains("error") ? j["error"] : j;
        reply.error = e.is_object() ? e.value("message", e.dump()) : e.dump();
    } else if (type == "message") { // a whole reply
        for (const auto& block : j.value("content", json::array()))
            if (block.value("type", "") == "text")
                reply.text += block.value("text", "");
        if (j["stop_reason"].is_string())
            reply.finish_reason = j["stop_reason"].get<std::string>();
        reply.input_tokens = opt_int(j.value("usage", json::object()), "input_tokens");
        reply.output_tokens = opt_int(j.value("usage", json::object()), "output_tokens");
    } else if (type == "message_start") {
        reply.input_tokens = opt_int(j["message"].value("usage", json::object()), "input_tokens");
    } else if (type == "content_block_delta") {
        const json& d = j.value("delta", json::object());
        if (d.value("type", "") == "text_delta")
            reply.text += d.value("text", "");
    } else if (type == "message_delta") {
        const json& d = j.value("delta", json::object());
        if (d.contains("stop_reason") && d["stop_reason"].is_string())
            reply.finish_reason = d["stop_reason"].get<std::string>();
        if (auto out = opt_int(j.value("usage", json::object()), "output_tokens"))
            reply.output_tokens = out;
    }
}

void apply_gemini(const json& j, ModelReply& reply) {
    if (j.contains("error")) {
        reply.error =
            j["error"].is_object() ? j["error"].value("message", j["error"].dump()) : j["error"].dump();
        return;
    }
    if (j.contains("candidates") && j["candidates"].is_array() && !j["candidates"].empty()) {
        const json& c = j["candidates"][0];
        for (const auto& part : c.value("content", json::object()).value("parts", json::array()))
            if (part.contains("text") && part["text"].is_string() && !part.value("thought", false))
                reply.text += part["text"].get<std::string>();
        if (c.contains("finishReason") && c["finishReason"].is_string())
            reply.finish_reason = c["finishReason"].get<std::string>();
    }
    if (j.contains("promptFeedback") && j["promptFeedback"].contains("blockReason")) {
        reply.refused = true;
        reply.finish_reason = j["promptFeedback"]["blockReason"].get<std::string>();
    }
    if (j.contains("usageMetadata")) {
        reply.input_tokens = opt_int(j["usageMetadata"], "promptTokenCount");
        reply.output_tokens = opt_int(j["usageMetadata"], "candidatesTokenCount");
    }
}

void apply(const ModelSpec& model, const json& j, ModelReply& reply, bool streamed) {
    switch (model.wire) {
    case WireFormat::OpenAiChat:
        apply_openai(j, reply, streamed);
        break;
    case WireFormat::AnthropicMessages:
        apply_anthropic(j, reply);
        break;
    case WireFormat::GeminiGenerate:
        apply_gemini(j, reply);
        break;
    }
}

void classify(const ModelSpec& model, ModelReply& reply) {
    const std::string& f = reply.finish_reason;
    switch (model.wire) {
    case WireFormat::OpenAiChat:
        reply.truncated = f == "length";
        reply.refused = reply.refused || f == "content_filter";
        break;
    case WireFormat::AnthropicMessages:
        reply.truncated = f == "max_tokens";
        reply.refused = reply.refused || f == "refusal";
        break;
    case WireFormat::GeminiGenerate:
        reply.truncated = f == "MAX_TOKENS";
        reply.refused = reply.refused || f == "SAFETY" || f == "RECITATION" || f == "PROHIBITED_CONTENT" ||
                        f == "BLOCKLIST" || f == "SPII";
        break;
    }
}

} // namespace

ModelReply parse_reply(const ModelSpec& model, const std::string& body, bool streamed) {
    ModelReply reply;
    if (!streamed) {
        json j = json::parse(body, nullptr, false);
        if (j.is_discarded()) {
            reply.error = "the reply is not complete JSON (" + std::to_string(body.size()) + " bytes)";
            return reply;
        }
        apply(model, j, reply, false);
        classify(model, reply);
        return reply;
    }
    // Server-sent events: "data: <json>" lines, events separated by blank lines; "[DONE]" ends
    // OpenAI's stream. Multi-line data fields are joined with '\n' as the SSE rules say.
    bool finished = false, saw_event = false;
    std::istringstream lines(body);
    std::string line, data;
    auto dispatch = [&] {
        if (data.empty())
            return;
        if (data == "[DONE]") {
            finished = true;
        } else {
            json j = json::parse(data, nullptr, false);
            if (j.is_discarded()) {
                reply.error = "a streamed event is not JSON: " + data.substr(0, 120);
            } else {
                saw_event = true;
                apply(model, j, reply, true);
                if (model.wire == WireFormat::AnthropicMessages && j.value("type", "") == "message_stop")
                    finished = true;
            }
        }
        data.clear();
    };
    while (std::getline(lines, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty()) {
            dispatch();
        } else if (line.starts_with("data:")) {
            std::string value = line.substr(5);
            if (!value.empty() && value.front() == ' ')
                value.erase(0, 1);
            data += (data.empty() ? "" : "\n") + value;
        }
    }
    dispatch();
    classify(model, reply);
    if (model.wire == WireFormat::GeminiGenerate)
        finished = !reply.finish_reason.empty();
    if (model.wire == WireFormat::OpenAiChat && !reply.finish_reason.empty())
        finished = true; // some servers omit [DONE]
    if (reply.error.empty() && (!saw_event || !finished))
        reply.error = "the stream ended before the reply was complete";
    return reply;
}

} // namespace pkbw::generate
