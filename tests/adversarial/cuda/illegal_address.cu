// Adversarial candidate (cuda): rank 1's kernel writes through a wild device pointer (an illegal
// address: a sticky CUDA error that ruins the context). Expected: crash naming rank 1, phase
// candidate, with CUDA's "illegal memory access" in the message.
#include "adversarial_common.cuh"

namespace {
__global__ void wild_store(float* p) {
    p[threadIdx.x] = 1.f;
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.rank == 1)
        wild_store<<<1, 32, 0, ctx.stream()>>>(reinterpret_cast<float*>(0x10));
    return adversarial::all_reduce(ctx, "illegal");
}
