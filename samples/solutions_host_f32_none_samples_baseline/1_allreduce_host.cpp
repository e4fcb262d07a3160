// Hand-written sample candidate (not LLM output)
// PKB 1 (all-reduce, sum) on the host backend: inputs are copied into a symmetric buffer in POSIX
// shared memory; after a barrier each rank sums every peer's buffer element by element.
#include "pkbw/solution.h"

#include <cstring>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& out = ctx.output(0);
    if (in.dtype != pkbw::DType::F32) {
        return ctx.fail("host allreduce sample: only f32 is supported");
    }
    const pkbw::SymmetricMemory sym = ctx.symmetric("allreduce_host", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* dst = out.as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r) {
            sum += static_cast<const float*>(sym.peers[r])[i];
        }
        dst[i] = sum;
    }
    ctx.barrier(); // peers finish reading before the next call overwrites the buffers
    return 0;
}
