#include "http_client.h"

#include "pkbw/core/error.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <curl/curl.h>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

namespace pkbw::generate {

namespace {

// curl_global_init is not thread-safe: done once, before the first handle.
void global_init() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            throw Error("libcurl: curl_global_init failed");
    });
}

struct EasyDeleter {
    void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct ListDeleter {
    void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

struct Transfer {
    HttpResult* result;
    const std::function<void(std::string_view)>* on_data;
    double stall_seconds;
    curl_off_t last_received = -1;
    std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();
    bool stalled = false;
};

// A stall is measured from the last byte received (or from the start): libcurl's own low-speed
// check averages over several seconds and counts the upload, so it misses a server that accepts
// the request and then says nothing.
int on_progress(void* user, curl_off_t, curl_off_t received, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    auto now = std::chrono::steady_clock::now();
    if (received != t->last_received) {
        t->last_received = received;
        t->last_progress = now;
        return 0;
    }
    if (std::chrono::duration<double>(now - t->last_progress).count() > t->stall_seconds) {
        t->stalled = true;
        return 1; // aborts the transfer
    }
    return 0;
}

size_t write_body(char* data, size_t size, size_t count, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string_view chunk(data, size * count);
    t->result->body.append(chunk);
    if (t->on_data && *t->on_data)
        (*t->on_data)(chunk);
    return chunk.size();
}

size_t write_header(char* data, size_t size, size_t count, void* user) {
    auto* result = static_cast<HttpResult*>(user);
    std::string line(data, size * count);
    auto colon = line.find(':');
    if (line.starts_with("HTTP/")) {
        result->headers.clear(); // a new response (after a 100 Continue or a redirect)
    } else if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (auto& ch : name)
            ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        value.erase(value.find_last_not_of(" \t\r\n") + 1);
        result->headers[name] = value;
    }
    return size * count;
}

} // namespace

bool is_retryable(const HttpResult& result) {
    if (result.unresolved)
        return false; // a host name that does not resolve (a typo in --base-url) will not on a retry
    if (!result.transport_error.empty())
        return true; // timeouts, refused or dropped connections, bodies cut short
    return result.status == 429 || result.status == 408 || (result.status >= 500 && result.status <= 599);
}

std::optional<double> retry_after_seconds(const HttpResult& result) {
    auto found = result.headers.find("retry-after");
    if (found == result.headers.end() || found->second.empty())
        return std::nullopt;
    const std::string& v = found->second;
    char* end = nullptr;
    double seconds = std::strtod(v.c_str(), &end);
    if (end != v.c_str() && *end == '\0')
        return seconds >= 0 ? std::optional<double>(seconds) : std::nullopt;
    time_t when = curl_getdate(v.c_str(), nullptr); // an HTTP date
    if (when < 0)
        return std::nullopt;
    return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

HttpClient::HttpClient(HttpSettings settings)
    : settings_(settings) {
    global_init();
}

HttpResult HttpClient::post(const HttpRequest& request,
                            const std::function<void(std::string_view)>& on_data) const {
    HttpResult result;
    std::unique_ptr<CURL, EasyDeleter> handle(curl_easy_init());
    if (!handle)
        throw Error("libcurl: curl_easy_init failed");
    std::unique_ptr<curl_slist, ListDeleter> headers;
    for (const auto& header : request.headers) {
        curl_slist* appended = curl_slist_append(headers.get(), header.c_str());
        if (appended == nullptr)
            throw Error("libcurl: cannot build the header list");
        (void)headers.release();
        headers.reset(appended);
    }
    Transfer transfer{&result, &on_data, settings_.stall_seconds};
    CURL* h = handle.get();
    curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, write_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &result);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L); // threads: no SIGALRM-based DNS timeouts
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(settings_.connect_seconds * 1000));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(settings_.total_seconds * 1000));
    // A stalled connection: fewer than 1 byte/s for stall_seconds.
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, static_cast<long>(std::ceil(settings_.stall_seconds))));
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); // whatever libcurl decodes
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &transfer);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    char error_buffer[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);

    auto start = std::chrono::steady_clock::now();
    CURLcode code = curl_easy_perform(h);
    result.latency_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &result.status);
    if (code != CURLE_OK) {
        // curl's messages name the host and the failure, never a header (so never a key).
        result.transport_error =
            std::string(curl_easy_strerror(code)) + (error_buffer[0] ? std::string(": ") + error_buffer : "");
        result.timed_out = code == CURLE_OPERATION_TIMEDOUT || transfer.stalled;
        result.unresolved = code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_URL_MALFORMAT;
        if (transfer.stalled)
            result.transport_error = "timeout: no data received for " +
                                     std::to_string(settings_.stall_seconds) + " s (stalled connection)";
    }
    return result;
}

HttpResult HttpClient::post_with_retries(const HttpRequest& request,
                                         const std::function<void(int, const HttpResult&, bool)>& on_try,
                                         const std::function<bool(const HttpResult&)>& also_retry,
                                         const std::function<void(std::string_view)>& on_data) const {
    thread_local std::mt19937 rng(std::random_device{}());
    for (int attempt = 0;; ++attempt) {
        HttpResult result = post(request, on_data);
        bool retry =
            (is_retryable(result) || (also_retry && also_retry(result))) && attempt < settings_.max_retries;
        if (on_try)
            on_try(attempt, result, retry);
        if (!retry)
            return result;
        double wait =
            std::min(settings_.max_backoff_seconds, settings_.backoff_seconds * std::pow(2.0, attempt));
        wait *= std::uniform_real_distribution<double>(0.75, 1.25)(rng); // spread concurrent retries
        if (auto after = retry_after_seconds(result))
            wait = std::min(settings_.max_backoff_seconds, std::max(wait, *after));
        std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
}

} // namespace pkbw::generate
