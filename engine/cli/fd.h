// Owning file descriptors and child processes: every handle the launcher opens is released on every
// path out of it, including exceptions.
#pragma once

#include <string>
#include <sys/types.h>
#include <utility>

namespace pkbw::cli {

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd)
        : fd_(fd) {}
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    UniqueFd(UniqueFd&& other) noexcept
        : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) {
            reset();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    ~UniqueFd() { reset(); }

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    int release() { return std::exchange(fd_, -1); }
    void reset(int fd = -1);

private:
    int fd_ = -1;
};

struct Pipe {
    UniqueFd read, write;
};
// Both ends close-on-exec; throws pkbw::Error naming `what` on failure.
Pipe make_pipe(const std::string& what);
void set_nonblocking(int fd);

// Signal name for messages: "SIGSEGV" (or "signal 42").
std::string signal_name(int signal);

} // namespace pkbw::cli
