// A loopback HTTP server (cpp-httplib) that replays replies written for the tests, in the providers'
// wire formats, and injects faults: an HTTP status with headers, a stalled reply, a body cut short.
// Nothing here was recorded from a live provider.
#pragma once

#include <chrono>
#include <deque>
#include <httplib.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pkbw::test {

struct ScriptedReply {
    enum class Fault { None, Stall, CutShort };
    ScriptedReply() = default;
    ScriptedReply(int status_code, std::string reply_body, std::string type = "application/json",
                  std::vector<std::pair<std::string, std::string>> extra_headers = {})
        : status(status_code)
        , body(std::move(reply_body))
        , content_type(std::move(type))
        , headers(std::move(extra_headers)) {}
    int status = 200;
    std::string body;
    std::string content_type = "application/json";
    std::vector<std::pair<std::string, std::string>> headers;
    Fault fault = Fault::None;
    double stall_seconds = 0;
};

struct ReceivedRequest {
    std::string path;
    std::string body;
    httplib::Headers headers;
};

class FakeProvider {
public:
    FakeProvider() {
        server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
        port_ = server_.bind_to_any_port("127.0.0.1");
        thread_ = std::thread([this] { server_.listen_after_bind(); });
        while (!server_.is_running())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ~FakeProvider() {
        server_.stop();
        thread_.join();
    }
    FakeProvider(const FakeProvider&) = delete;
    FakeProvider& operator=(const FakeProvider&) = delete;

    int port() const { return port_; }
    std::string base_url(const std::string& prefix = "/v1") const {
        return "http://127.0.0.1:" + std::to_string(port_) + prefix;
    }
    void push(ScriptedReply reply) {
        std::lock_guard lock(mutex_);
        script_.push_back(std::move(reply));
    }
    std::vector<ReceivedRequest> received() const {
        std::lock_guard lock(mutex_);
        return received_;
    }

private:
    void handle(const httplib::Request& req, httplib::Response& res) {
        ScriptedReply reply;
        {
            std::lock_guard lock(mutex_);
            received_.push_back({req.path + (req.params.empty() ? "" : "?alt=" + req.get_param_value("alt")),
                                 req.body, req.headers});
            if (script_.empty()) {
                reply.status = 599;
                reply.body = "{\"error\":{\"message\":\"the test script has no more replies\"}}";
            } else {
                reply = script_.front();
                script_.pop_front();
            }
        }
        if (reply.fault == ScriptedReply::Fault::Stall)
            std::this_thread::sleep_for(std::chrono::duration<double>(reply.stall_seconds));
        res.status = reply.status;
        for (const auto& [name, value] : reply.headers)
            res.set_header(name, value);
        if (reply.fault == ScriptedReply::Fault::CutShort) {
            // Promise the whole body, send half of it, then drop the connection.
            std::string half = reply.body.substr(0, reply.body.size() / 2);
            res.set_content_provider(reply.body.size(), reply.content_type,
                                     [half](size_t offset, size_t, httplib::DataSink& sink) {
                                         if (offset == 0)
                                             sink.write(half.data(), half.size());
                                         return false;
                                     });
            return;
        }
        res.set_content(reply.body, reply.content_type);
    }

    httplib::Server server_;
    int port_ = 0;
    std::thread thread_;
    mutable std::mutex mutex_;
    std::deque<ScriptedReply> script_;
    std::vector<ReceivedRequest> received_;
};

} // namespace pkbw::test
