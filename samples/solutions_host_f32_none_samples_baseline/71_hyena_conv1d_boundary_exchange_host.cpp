// Hand-written sample candidate (not LLM output)
// PKB 71 (x [1, C, 2L] = zigzag chunks a | b, weight [C, 1, 7]; chunk a is convolved after the last 6
// samples of rank r-1's chunk a (zeros on rank 0), chunk b after the last 6 samples of rank r+1's
// chunk b (the last rank uses its own chunk a's); depthwise, no padding) on the host backend, fp32.
// x goes into a symmetric buffer and the neighbours' tails are read in place.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::F32) {
        return ctx.fail("this sample handles fp32");
    }
    const long long c_n = ctx.input(0).shape[1], len = ctx.input(0).shape[2] / 2,
                    taps = ctx.input(1).shape[2];
    const pkbw::SymmetricMemory xs = ctx.symmetric("conv71_x", ctx.input(0).nbytes());
    std::memcpy(xs.local, ctx.input(0).data, ctx.input(0).nbytes());
    ctx.barrier();
    const float* x = ctx.input(0).as<float>();
    const float* w = ctx.input(1).as<float>();
    float* y = ctx.output(0).as<float>();
    const int last = ctx.world_size - 1;
    for (int which = 0; which < 2; ++which) {
        // Source of the left context: (rank, chunk) whose tail precedes this chunk, or none (zeros).
        const int src_rank = which == 0 ? ctx.rank - 1 : (ctx.rank == last ? ctx.rank : ctx.rank + 1);
        const int src_chunk = which == 0 ? 0 : (ctx.rank == last ? 0 : 1);
        const float* src = src_rank >= 0 ? static_cast<const float*>(xs.peers[src_rank]) : nullptr;
        for (long long c = 0; c < c_n; ++c) {
            const float* row = x + c * 2 * len + which * len;
            for (long long t = 0; t < len; ++t) {
                float acc = 0.f;
                for (long long k = 0; k < taps; ++k) {
                    const long long s = t + k - (taps - 1); // < 0: the halo
                    float v = 0.f;
                    if (s >= 0) {
                        v = row[s];
                    } else if (src) {
                        v = src[c * 2 * len + src_chunk * len + len + s];
                    }
                    acc += w[c * taps + k] * v;
                }
                y[c * 2 * len + which * len + t] = acc;
            }
        }
    }
    ctx.barrier(); // peers may still read this rank's x
    return 0;
}
