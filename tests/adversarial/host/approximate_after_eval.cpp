// Adversarial candidate: exact for an eval's worth of calls (5), then a cheaper, wrong answer (the sum of
// its own input only, scaled by the world size), as a candidate that degrades once it thinks the
// checking is over. Every timed call is checked on fresh inputs: expected for perf, mismatch, "not
// allclose on fresh inputs in timed calls" (its outputs are written, so the timing is not the question).
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static long calls = 0;
    const pkbw::TensorView& in = ctx.input(0);
    float* out = ctx.output(0).as<float>();
    if (++calls > 5) {
        for (std::int64_t i = 0; i < in.numel(); ++i)
            out[i] = static_cast<float>(ctx.world_size) * in.as<float>()[i];
        return 0;
    }
    const pkbw::SymmetricMemory sym = ctx.symmetric("approximate", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r)
            sum += static_cast<const float*>(sym.peers[r])[i];
        out[i] = sum;
    }
    ctx.barrier();
    return 0;
}
