// Adversarial candidate: counts its calls. The first ones (an eval's trials) are computed; from then
// on it computes one call of three and skips two, as a candidate that expects only some timed calls to
// be looked at would. Expected for perf: invalid_timing, the skipped calls fail their check.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static long calls = 0;
    ++calls;
    if (calls > 5 && calls % 3 != 0) {
        return 0; // every rank counts the same calls, so every rank skips the same ones
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("count", in.nbytes());
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
