// Adversarial candidate: computes the right answer, but on rank 1 first starts, in a session of its own,
// a process that forks and exits every ~0.1 ms (each generation named "pkbwforkescape"), so that a scan of
// /proc pid by pid is always a generation behind it; it would live on after the run. Expected: pass, with
// a warning naming the processes killed, and no process named pkbwforkescape left anywhere on the host.
// It ends by itself after 100 s, so that a failing check cannot leave it running for ever.
#include "pkbw/solution.h"

#include <cstring>
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
            ::_exit(0); // the parent goes, its child carries on under a new pid
        }
    }
    ::_exit(0);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool started = false;
    if (!started && ctx.rank == 1) {
        started = true;
        const double end = monotonic_s() + 100;
        if (::fork() == 0) {
            fork_and_exit_until(end);
        }
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("escape", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r)
            sum += static_cast<const float*>(sym.peers[r])[i];
        out[i] = sum;
    }
    ctx.barrier();
    return 0;
}
