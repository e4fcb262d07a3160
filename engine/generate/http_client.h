// One HTTP POST through libcurl, with the retry policy model providers need (docs/generate.md
// "Retries"): 429 and 5xx (Retry-After honoured), timeouts, dropped connections and truncated bodies
// are retried with exponential backoff; other 4xx are not. A stalled connection is bounded by the
// low-speed timeout (no byte for `stall_seconds`), a whole request by `total_seconds`.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::generate {

struct HttpSettings {
    double connect_seconds = 30;
    double total_seconds = 3600; // a long reply may take many minutes
    double stall_seconds = 300;  // no byte received for this long: timed out
    int max_retries = 5;         // tries after the first
    double backoff_seconds = 2;  // first wait; doubled each retry, with jitter
    double max_backoff_seconds = 120;
};

struct HttpRequest {
    std::string url;
    std::vector<std::string> headers; // "Name: value"; the only place keys travel, never recorded
    std::string body;
};

// One try's outcome.
struct HttpResult {
    long status = 0;                            // 0 when no response arrived
    std::map<std::string, std::string> headers; // names in lower case
    std::string body;
    std::string transport_error; // curl's message ("" when the transfer completed)
    bool timed_out = false;
    bool unresolved = false; // the host name did not resolve (or the URL is malformed): never retried
    double latency_ms = 0;
};

// Whether a try should be retried, and after how long (Retry-After, or the backoff).
bool is_retryable(const HttpResult& result);
// Retry-After as seconds ("120" or an HTTP date); nullopt when absent or unreadable.
std::optional<double> retry_after_seconds(const HttpResult& result);

class HttpClient {
public:
    explicit HttpClient(HttpSettings settings);
    // One try. `on_data` (optional) sees the body as it arrives, for streamed replies.
    HttpResult post(const HttpRequest& request,
                    const std::function<void(std::string_view)>& on_data = {}) const;
    // Tries until a non-retryable result or the retries are spent; `on_try` sees every try (for the
    // record) with its number, and whether another follows.
    // `also_retry` adds a reason of the caller's (a 200 whose body cannot be read).
    HttpResult
    post_with_retries(const HttpRequest& request,
                      const std::function<void(int try_number, const HttpResult&, bool retrying)>& on_try,
                      const std::function<bool(const HttpResult&)>& also_retry = {},
                      const std::function<void(std::string_view)>& on_data = {}) const;
    const HttpSettings& settings() const { return settings_; }

private:
    HttpSettings settings_;
};

} // namespace pkbw::generate
