// Where a rank's protocol events go: the launcher's pipe (PKBW_CONTROL_FD) or, when started by
// another launcher, a JSON-lines file in the run directory.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pkbw::engine {

class EventSink {
public:
    // Uses PKBW_CONTROL_FD when set, else appends to `fallback_path`.
    static EventSink from_environment(const std::string& fallback_path);
    EventSink(EventSink&& other) noexcept;
    ~EventSink();
    EventSink(const EventSink&) = delete;
    EventSink& operator=(const EventSink&) = delete;

    // Writes one line. If the launcher is gone (broken pipe) the rank has no one to report to and
    // exits at once: its group is being torn down anyway.
    void send(const nlohmann::json& event);

private:
    explicit EventSink(int fd, bool owned)
        : fd_(fd)
        , owned_(owned) {}
    int fd_ = -1;
    bool owned_ = false;
};

} // namespace pkbw::engine
