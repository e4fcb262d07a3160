// Hand-written sample candidate (not LLM output)
// PKB 44 (blockwise int8 quantise-dequantise with absmax/127 scales, fp32 sum over ranks, mean,
// cast to bf16), baseline: a block per quantisation block writes its fp32 reconstruction into a
// symmetric buffer, a host barrier, a kernel sums the peers' buffers in rank order and casts, a
// host barrier before the buffer is reused.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 128;

__global__ void quantise(const __nv_bfloat16* x, float* rec, long long n, int block) {
    __shared__ float part[kThreads];
    const long long begin = blockIdx.x * static_cast<long long>(block);
    float m = 0.f;
    for (int j = threadIdx.x; j < block; j += kThreads)
        if (begin + j < n)
            m = fmaxf(m, fabsf(__bfloat162float(x[begin + j])));
    part[threadIdx.x] = m;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + step]);
        __syncthreads();
    }
    const float scale = fmaxf(part[0], 1e-8f) * (1.0f / 127.0f);
    for (int j = threadIdx.x; j < block; j += kThreads)
        if (begin + j < n) {
            const float q = fminf(fmaxf(rintf(__bfloat162float(x[begin + j]) / scale), -127.f), 127.f);
            rec[begin + j] = q * scale;
        }
}

__global__ void sum_peers(void* const* peers, int world, __nv_bfloat16* out, long long n) {
    const float inv_world = 1.0f / static_cast<float>(world);
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float s = 0.f;
        for (int r = 0; r < world; ++r)
            s += static_cast<const float*>(peers[r])[i];
        out[i] = __float2bfloat16(s * inv_world);
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    if (x.dtype != pkbw::DType::BF16) {
        return ctx.fail("this sample handles bf16 gradients");
    }
    const long long n = x.numel();
    const int block = static_cast<int>(ctx.param("block_size", 128));
    const pkbw::SymmetricMemory rec =
        ctx.symmetric("qgrad_baseline", static_cast<std::size_t>(n) * sizeof(float));
    quantise<<<static_cast<unsigned>((n + block - 1) / block), kThreads, 0, ctx.stream()>>>(
        x.as<const __nv_bfloat16>(), static_cast<float*>(rec.local), n, block);
    ctx.barrier();
    sum_peers<<<static_cast<unsigned>(n / 256 + 1 > 2048 ? 2048 : n / 256 + 1), 256, 0, ctx.stream()>>>(
        rec.peers_device, ctx.world_size, ctx.output(0).as<__nv_bfloat16>(), n);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
