// Asking a model for one candidate and recording the exchange (docs/generate.md): the request with
// retries, the reply's finish reason checked, the code block chosen, the file written only when the
// reply is complete and has code, and every try stored with its tokens, latency and cost estimate.
#pragma once

#include "extract.h"
#include "http_client.h"
#include "model_spec.h"
#include "provider.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {
class Store;
}

namespace pkbw::generate {

struct AskRequest {
    std::string stem;
    int sample = 0;
    int attempt = 0;
    std::string system;
    std::vector<ChatTurn> turns;
    std::string language;                // python | cuda | cpp
    std::filesystem::path solution_path; // written when the outcome is "saved"
};

struct AskResult {
    std::string outcome; // saved | truncated | no_code | empty | refused | http_error
    std::string message; // one line for the user
    std::string reply_text;
    std::string code; // the chosen block ("" unless saved)
    std::optional<double> cost_usd;
    std::int64_t exchange_id = 0;
    int tries = 0;
};

// The key from the model's environment variable (or its fallback); nullopt if unset. Throws
// pkbw::Error naming the variable when the provider needs a key and none is set.
std::optional<std::string> key_from_environment(const ModelSpec& model, bool required);

class ModelClient {
public:
    // `store` may be null (nothing recorded); `generation_id` is the generations row.
    ModelClient(ModelSpec model, ProviderSettings provider, HttpSettings http, Store* store,
                std::int64_t generation_id);
    AskResult ask(const AskRequest& request);
    const ModelSpec& model() const { return model_; }
    // Called (from the asking thread) for every try that failed and is retried: the request, the
    // failed try's number (0 first) and why; for a progress line.
    using RetryObserver = std::function<void(const AskRequest&, int, const std::string&)>;
    void on_retry(RetryObserver observer) { on_retry_ = std::move(observer); }

private:
    std::string redact(std::string text) const;

    ModelSpec model_;
    ProviderSettings provider_;
    HttpClient client_;
    Store* store_;
    std::int64_t generation_id_;
    std::mutex store_mutex_;
    RetryObserver on_retry_;
};

} // namespace pkbw::generate
