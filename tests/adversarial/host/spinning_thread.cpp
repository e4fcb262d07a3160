// Adversarial candidate: computes the right answer, and from its first call on keeps two threads of its own
// busy after every call returns (as a candidate that defers its work to a host thread does, while its
// outputs stay right). Only the judge's watch of its CPU after each timed block can see it. Expected for
// perf: invalid_timing, "work left running on host threads".
#include "pkbw/solution.h"

#include <atomic>
#include <cstring>
#include <thread>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static std::atomic<unsigned long> spins{0};
    static bool started = false;
    if (!started) {
        started = true;
        for (int t = 0; t < 2; ++t) {
            std::thread([] {
                while (true) {
                    spins.fetch_add(1, std::memory_order_relaxed);
                }
            }).detach();
        }
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
    return 0;
}
