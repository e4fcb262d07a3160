// Adversarial candidate: computes the all-reduce, then writes one element past the end of its output
// and one before its start. Expected: invalid_output naming the output and both guard regions.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("oob", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r)
            sum += static_cast<const float*>(sym.peers[r])[i];
        out[i] = sum;
    }
    out[in.numel() + 3] = 1.f; // past the end
    out[-1] = 1.f;             // before the start
    ctx.barrier();
    return 0;
}
