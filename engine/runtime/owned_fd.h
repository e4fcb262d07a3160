// An owning file descriptor for the runtime (the launcher has its own, engine/cli/fd.h, which the runtime
// does not link): closed on every path out of its scope.
#pragma once

#include <unistd.h>
#include <utility>

namespace pkbw::engine {

class OwnedFd {
public:
    OwnedFd() = default;
    explicit OwnedFd(int fd)
        : fd_(fd) {}
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
    OwnedFd(OwnedFd&& other) noexcept
        : fd_(std::exchange(other.fd_, -1)) {}
    OwnedFd& operator=(OwnedFd&& other) noexcept {
        if (this != &other) {
            reset(std::exchange(other.fd_, -1));
        }
        return *this;
    }
    ~OwnedFd() { reset(); }

    int get() const { return fd_; }
    explicit operator bool() const { return fd_ >= 0; }
    void reset(int fd = -1) {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

} // namespace pkbw::engine
