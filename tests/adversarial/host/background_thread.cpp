// Adversarial candidate: after the eval's calls, returns at once and leaves the work to a thread of its
// own (the next call waits for the previous thread), so a timed call measures nothing. Expected for
// perf: invalid_timing (its process keeps working after its calls return; the re-check reads an
// output the thread has not written yet).
#include "pkbw/solution.h"

#include <cstring>
#include <thread>
#include <vector>

namespace {
std::thread pending;

// Slow enough to be seen (tens of ms at 512x512), and the output is written only at the end, as a
// deferred kernel's would be.
void compute(const float* a, const float* b, float* out, std::int64_t n) {
    std::vector<float> sum(static_cast<std::size_t>(n));
    for (int repeat = 0; repeat < 200; ++repeat)
        for (std::int64_t i = 0; i < n; ++i)
            sum[static_cast<std::size_t>(i)] = a[i] + b[i] + 0.0f * static_cast<float>(repeat);
    std::memcpy(out, sum.data(), static_cast<std::size_t>(n) * sizeof(float));
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static int calls = 0;
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("background", in.nbytes());
    if (pending.joinable())
        pending.join();
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    static std::vector<float> others;
    others.assign(in.numel(), 0.f);
    for (int r = 0; r < ctx.world_size; ++r)
        if (r != ctx.rank)
            for (std::int64_t i = 0; i < in.numel(); ++i)
                others[i] += static_cast<const float*>(sym.peers[r])[i];
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    const float* mine = in.as<float>();
    if (++calls <= 5) {
        compute(mine, others.data(), out, in.numel());
        return 0;
    }
    pending = std::thread(compute, mine, others.data(), out, in.numel());
    return 0;
}
