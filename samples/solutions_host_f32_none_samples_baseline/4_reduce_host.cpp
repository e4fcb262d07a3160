// Hand-written sample candidate (not LLM output)
// PKB 4 (reduce, sum, onto param `dst`) on the host backend: every rank publishes its input in a
// symmetric buffer; the destination sums all buffers, every other rank returns its input
// unchanged (PKB compares those outputs too).
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const int dst = static_cast<int>(ctx.param("dst", 0));
    if (in.dtype != pkbw::DType::F32) {
        return ctx.fail("host reduce sample: only f32 is supported");
    }
    if (dst < 0 || dst >= ctx.world_size) {
        return ctx.fail("host reduce sample: param dst is outside [0, world_size)");
    }
    const pkbw::SymmetricMemory sym = ctx.symmetric("reduce_host", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    if (ctx.rank == dst) {
        for (std::int64_t i = 0; i < in.numel(); ++i) {
            float sum = 0.f;
            for (int r = 0; r < ctx.world_size; ++r) {
                sum += static_cast<const float*>(sym.peers[r])[i];
            }
            out[i] = sum;
        }
    } else {
        std::memcpy(out, in.data, in.nbytes());
    }
    ctx.barrier(); // the destination finishes reading before anyone's next call overwrites its buffer
    return 0;
}
