// Owning file descriptors and child processes: every handle the launcher opens is released on every
// path out of it, including exceptions.
#pragma once

#include "pkbw/core/unique_fd.h"

#include <string>
#include <sys/types.h>
#include <utility>

namespace pkbw::cli {

using pkbw::UniqueFd; // core/unique_fd.h

struct Pipe {
    UniqueFd read, write;
};
// Both ends close-on-exec; throws pkbw::Error naming `what` on failure.
Pipe make_pipe(const std::string& what);
void set_nonblocking(int fd);

// Signal name for messages: "SIGSEGV" (or "signal 42").
std::string signal_name(int signal);

} // namespace pkbw::cli
