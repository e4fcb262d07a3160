// Adversarial candidate: rank 1 starts, in a session of its own, a process that forks and exits every
// ~0.1 ms (each generation named "pkbwforkescape", as in fork_escape), then every rank spins until the
// watchdog kills the group. The judges die with their group, so their containers are left with the
// forker in them, and the forker is re-parented to pkbw. Expected: timeout, with a warning that pkbw
// killed what the ranks left, and no process named pkbwforkescape left anywhere on the host. It ends by
// itself after 100 s, so that a failing check cannot leave it running for ever.
#include "pkbw/solution.h"

#include <ctime>
#include <sys/prctl.h>
#include <unistd.h>

namespace {

double monotonic_s() {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

// Forked from a process with threads: async-signal-safe calls only.
[[noreturn]] void fork_and_exit_until(double end) {
    ::setsid();
    ::prctl(PR_SET_NAME, "pkbwforkescape");
    const timespec pause{0, 100000};
    while (monotonic_s() < end) {
        ::nanosleep(&pause, nullptr);
        if (::fork() != 0) {
            ::_exit(0);
        }
    }
    ::_exit(0);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.rank == 1 && ::fork() == 0) {
        fork_and_exit_until(monotonic_s() + 100);
    }
    volatile unsigned long spin = 0;
    while (true) {
        spin = spin + 1;
    }
    return 0;
}
