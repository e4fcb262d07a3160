#include "fd.h"

#include "pkbw/core/error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace pkbw::cli {

Pipe make_pipe(const std::string& what) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw Error("cannot create a pipe for " + what + ": " + std::strerror(errno));
    return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void set_nonblocking(int fd) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0)
        ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

std::string signal_name(int signal) {
    const char* abbrev = ::sigabbrev_np(signal);
    if (abbrev)
        return std::string("SIG") + abbrev;
    return "signal " + std::to_string(signal);
}

} // namespace pkbw::cli
