// Hand-written sample candidate (not LLM output)
// PKB 18 (tensor-parallel RMSNorm), baseline: each rank publishes its per-row fp32 sums of squares
// in a symmetric buffer; after a host barrier the normalising kernel adds the peers' sums itself.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 256;

__global__ void row_sum_squares(const __nv_bfloat16* h, float* sums, long long n) {
    __shared__ float part[kThreads];
    float s = 0.f;
    for (long long j = threadIdx.x; j < n; j += kThreads) {
        const float v = __bfloat162float(h[blockIdx.x * n + j]);
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
        sums[blockIdx.x] = part[0];
}

__global__ void normalise(const __nv_bfloat16* h, const __nv_bfloat16* w, void* const* peer_sums, int world,
                          __nv_bfloat16* out, long long n, float inv_hidden, float eps) {
    float total = 0.f;
    for (int r = 0; r < world; ++r)
        total += static_cast<const float*>(peer_sums[r])[blockIdx.x];
    const float scale = rsqrtf(total * inv_hidden + eps);
    for (long long j = threadIdx.x; j < n; j += kThreads) {
        const long long i = blockIdx.x * n + j;
        const __nv_bfloat16 normed = __float2bfloat16(__bfloat162float(h[i]) * scale);
        out[i] = __float2bfloat16(__bfloat162float(w[j]) * __bfloat162float(normed));
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    if (h.dtype != pkbw::DType::BF16) {
        return ctx.fail("rms-norm baseline: bf16 only");
    }
    const long long m = h.shape[0], n = h.shape[1];
    const pkbw::SymmetricMemory sym =
        ctx.symmetric("rms_baseline", static_cast<std::size_t>(m) * sizeof(float));
    row_sum_squares<<<static_cast<unsigned>(m), kThreads, 0, ctx.stream()>>>(
        h.as<const __nv_bfloat16>(), static_cast<float*>(sym.local), n);
    ctx.barrier();
    normalise<<<static_cast<unsigned>(m), kThreads, 0, ctx.stream()>>>(
        h.as<const __nv_bfloat16>(), ctx.input(1).as<const __nv_bfloat16>(), sym.peers_device, ctx.world_size,
        ctx.output(0).as<__nv_bfloat16>(), n, 1.0f / static_cast<float>(n * ctx.world_size),
        static_cast<float>(ctx.param("variance_epsilon", 1e-5)));
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
