#include "event_sink.h"

#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/rank_environment.h"
#include "pkbw/core/status.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace pkbw::engine {

EventSink EventSink::from_environment(const std::string& fallback_path) {
    // A closed pipe must surface as EPIPE from write(), not kill the process with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    if (const char* fd_text = std::getenv(rank_environment::kEnvControlFd.data()); fd_text && *fd_text) {
        char* end = nullptr;
        const long fd = std::strtol(fd_text, &end, 10);
        if (*end == '\0' && fd >= 0 && ::fcntl(static_cast<int>(fd), F_GETFD) != -1) {
            return EventSink(static_cast<int>(fd), false);
        }
    }
    const int fd = ::open(fallback_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        throw Error("cannot open the event file " + fallback_path + ": " + std::strerror(errno));
    }
    return EventSink(fd, true);
}

EventSink::EventSink(EventSink&& other) noexcept
    : fd_(other.fd_)
    , owned_(other.owned_) {
    other.fd_ = -1;
    other.owned_ = false;
}

EventSink::~EventSink() {
    if (owned_ && fd_ >= 0) {
        ::close(fd_);
    }
}

void EventSink::send(const nlohmann::json& event) {
    const std::string line = protocol::to_line(event);
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            // The pipe was the only way to report; the exit code alone now tells the launcher.
            ::_exit(status::kExitInternal);
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

} // namespace pkbw::engine
