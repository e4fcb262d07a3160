// Adversarial candidate: computes the right answer, and keeps two threads of its own spinning whenever
// it has not been called for a while: while the judge times the reference (and while it compares), so
// that the reference looks slower and the candidate faster. Expected for perf: pass with no timing
// finding: its process tree is frozen while the reference is timed, and the tree's CPU time over those
// blocks stays at zero (the case checks every reference block's frozen_cpu_ms).
#include "pkbw/solution.h"

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace {
using Clock = std::chrono::steady_clock;
std::atomic<long long> last_call_ns{0};
std::atomic<unsigned long> spins{0};

long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

void spin_while_idle() {
    while (true) {
        if (now_ns() - last_call_ns.load() > 2'000'000) {
            spins.fetch_add(1, std::memory_order_relaxed); // busy: the judge is doing something else
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool started = false;
    last_call_ns = now_ns();
    if (!started) {
        started = true;
        for (int t = 0; t < 2; ++t)
            std::thread(spin_while_idle).detach();
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("spin", in.nbytes());
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
    last_call_ns = now_ns();
    return 0;
}
