// Hand-written sample candidate (not LLM output)
// PKB 21 (global L2 norm of three grads over all ranks, grads scaled in place by max_norm / norm
// when the norm exceeds max_norm), baseline: a sum-of-squares kernel adds block partials into this
// rank's slot of a symmetric fp32 array, a host barrier publishes it, and a second kernel adds the
// W slots in rank order, writes the norm and scales the grads; a last host barrier keeps the next
// call from clearing a slot a peer still reads.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;

struct Grads {
    __nv_bfloat16* data[3];
    long long numel[3];
};

__global__ void sum_squares(Grads g, float* slot) {
    __shared__ float part[kThreads];
    float s = 0.f;
    for (int k = 0; k < 3; ++k)
        for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < g.numel[k];
             i += static_cast<long long>(gridDim.x) * kThreads) {
            const float v = __bfloat162float(g.data[k][i]);
            s += v * v;
        }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] += part[threadIdx.x + step];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(slot, part[0]);
}

__global__ void clip(Grads g, void* const* slots, int world, float* norm_out, float max_norm) {
    float total = 0.f;
    for (int r = 0; r < world; ++r)
        total += *static_cast<const volatile float*>(slots[r]);
    const float norm = sqrtf(total);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *norm_out = norm;
    if (!(norm > max_norm))
        return;
    const float coef = max_norm / norm;
    for (int k = 0; k < 3; ++k)
        for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < g.numel[k];
             i += static_cast<long long>(gridDim.x) * kThreads)
            g.data[k][i] = __float2bfloat16(__bfloat162float(g.data[k][i]) * coef);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.num_inputs != 3 || ctx.input(0).dtype != pkbw::DType::BF16) {
        return ctx.fail("this sample handles three bf16 grads");
    }
    Grads g;
    for (int k = 0; k < 3; ++k) {
        g.data[k] = ctx.input(k).as<__nv_bfloat16>();
        g.numel[k] = ctx.input(k).numel();
    }
    const pkbw::SymmetricMemory slots = ctx.symmetric("clip21_baseline", sizeof(float));
    cudaMemsetAsync(slots.local, 0, sizeof(float), ctx.stream());
    sum_squares<<<264, kThreads, 0, ctx.stream()>>>(g, static_cast<float*>(slots.local));
    ctx.barrier();
    clip<<<264, kThreads, 0, ctx.stream()>>>(g, slots.peers_device, ctx.world_size, ctx.output(0).as<float>(),
                                             static_cast<float>(ctx.param("max_norm", 1.0)));
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
