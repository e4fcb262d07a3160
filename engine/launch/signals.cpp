#include "signals.h"

#include "fd.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <thread>
#include <unistd.h>

namespace pkbw::cli {
namespace {

std::atomic<int> g_interrupt{0};
int g_pipe_read = -1;
int g_pipe_write = -1;
struct sigaction g_old_chld, g_old_int, g_old_term;

extern "C" void on_signal(int signal) {
    int saved = errno;
    if (signal == SIGINT || signal == SIGTERM)
        g_interrupt.store(signal);
    if (g_pipe_write >= 0) {
        char byte = static_cast<char>(signal);
        [[maybe_unused]] auto n = ::write(g_pipe_write, &byte, 1); // full pipe: a wake-up is pending
    }
    errno = saved;
}

} // namespace

SignalScope::SignalScope() {
    Pipe pipe = make_pipe("signals");
    set_nonblocking(pipe.read.get());
    set_nonblocking(pipe.write.get());
    g_pipe_read = pipe.read.release();
    g_pipe_write = pipe.write.release();
    g_interrupt.store(0);
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGCHLD, &action, &g_old_chld);
    ::sigaction(SIGINT, &action, &g_old_int);
    ::sigaction(SIGTERM, &action, &g_old_term);
}

SignalScope::~SignalScope() {
    ::sigaction(SIGCHLD, &g_old_chld, nullptr);
    ::sigaction(SIGINT, &g_old_int, nullptr);
    ::sigaction(SIGTERM, &g_old_term, nullptr);
    ::close(g_pipe_read);
    ::close(g_pipe_write);
    g_pipe_read = g_pipe_write = -1;
}

int signal_pipe_fd() {
    return g_pipe_read;
}

void drain_signal_pipe() {
    if (g_pipe_read < 0)
        return;
    char buffer[64];
    while (::read(g_pipe_read, buffer, sizeof buffer) > 0) {
    }
}

int interrupt_signal() {
    return g_interrupt.load();
}

int await_interrupt(std::chrono::milliseconds within) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (interrupt_signal() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return interrupt_signal();
}

void simulate_interrupt() {
    on_signal(SIGINT);
}

} // namespace pkbw::cli
