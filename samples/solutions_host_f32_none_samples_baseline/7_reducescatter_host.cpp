// Hand-written sample candidate (not LLM output)
// PKB 7 (reduce-scatter, sum) on the host backend: every rank publishes its [W*M, N] input in a
// symmetric buffer; rank r sums row block r of every buffer into its [M, N] output.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (in.dtype != pkbw::DType::F32) {
        return ctx.fail("host reduce-scatter sample: only f32 is supported");
    }
    const pkbw::SymmetricMemory sym = ctx.symmetric("reducescatter_host", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    const std::int64_t count = ctx.output(0).numel();
    const std::int64_t offset = ctx.rank * count;
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < count; ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            sum += static_cast<const float*>(sym.peers[r])[offset + i];
        }
        out[i] = sum;
    }
    ctx.barrier();
    return 0;
}
