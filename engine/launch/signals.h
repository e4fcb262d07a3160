// SIGCHLD, SIGINT and SIGTERM become bytes on a self-pipe, so that the launcher's poll(2) loop and
// the compiler wait wake up on them without races; SIGINT/SIGTERM also set a flag the run checks
// between steps. Installed once per process by SignalScope and restored when it ends.
#pragma once

#include <chrono>

namespace pkbw::cli {

class SignalScope {
public:
    SignalScope();
    SignalScope(const SignalScope&) = delete;
    SignalScope& operator=(const SignalScope&) = delete;
    ~SignalScope();
};

// The read end of the self-pipe (-1 when no SignalScope is active).
int signal_pipe_fd();
// Reads every pending byte (never blocks).
void drain_signal_pipe();
// SIGINT or SIGTERM seen since the scope began: the signal number, or 0.
int interrupt_signal();
// Waits up to `within` for SIGINT or SIGTERM (returning at once when one was already seen): the
// signal number, or 0.
int await_interrupt(std::chrono::milliseconds within);
// For tests: behave as if SIGINT had arrived.
void simulate_interrupt();

} // namespace pkbw::cli
