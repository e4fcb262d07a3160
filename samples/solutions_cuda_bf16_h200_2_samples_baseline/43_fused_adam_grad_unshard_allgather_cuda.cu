// Hand-written sample candidate (not LLM output)
// PKB 43 (sharded Adam step + all-gather), baseline: an Adam kernel (fp32 math, one rounding) writes
// the updated shard into a symmetric buffer; after a host barrier a copy kernel gathers the shards.
#include "pkbw/solution.h"

#include <cmath>
#include <cuda_bf16.h>

namespace {

__global__ void adam(const __nv_bfloat16* g, const __nv_bfloat16* w, const __nv_bfloat16* m0,
                     const __nv_bfloat16* v0, __nv_bfloat16* w_out, long long count, float lr, float beta1,
                     float beta2, float eps, float bc1, float bc2) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i >= count)
        return;
    const float gi = __bfloat162float(g[i]);
    const float m = beta1 * __bfloat162float(m0[i]) + (1.f - beta1) * gi;
    const float v = beta2 * __bfloat162float(v0[i]) + (1.f - beta2) * gi * gi;
    w_out[i] = __float2bfloat16(__bfloat162float(w[i]) - lr * (m / bc1) / (sqrtf(v / bc2) + eps));
}

__global__ void gather(void* const* peers, __nv_bfloat16* out, int world, long long count) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < world * count)
        out[i] = static_cast<const __nv_bfloat16*>(peers[i / count])[i % count];
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.input(0).dtype != pkbw::DType::BF16) {
        return ctx.fail("adam baseline: bf16 only");
    }
    const long long p = ctx.input(0).numel();
    const double beta1 = ctx.param("beta1", 0.9), beta2 = ctx.param("beta2", 0.999),
                 step = ctx.param("step", 1);
    const pkbw::SymmetricMemory sym = ctx.symmetric("adam_baseline", p * sizeof(__nv_bfloat16));
    adam<<<static_cast<unsigned>((p + 255) / 256), 256, 0, ctx.stream()>>>(
        ctx.input(0).as<const __nv_bfloat16>(), ctx.input(1).as<const __nv_bfloat16>(),
        ctx.input(2).as<const __nv_bfloat16>(), ctx.input(3).as<const __nv_bfloat16>(),
        static_cast<__nv_bfloat16*>(sym.local), p, static_cast<float>(ctx.param("lr", 1e-3)),
        static_cast<float>(beta1), static_cast<float>(beta2), static_cast<float>(ctx.param("eps", 1e-8)),
        static_cast<float>(1.0 - std::pow(beta1, step)), static_cast<float>(1.0 - std::pow(beta2, step)));
    ctx.barrier();
    const long long total = p * ctx.world_size;
    gather<<<static_cast<unsigned>((total + 255) / 256), 256, 0, ctx.stream()>>>(
        sym.peers_device, ctx.output(0).as<__nv_bfloat16>(), ctx.world_size, p);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
