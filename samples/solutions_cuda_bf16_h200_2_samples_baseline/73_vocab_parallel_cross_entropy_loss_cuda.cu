// Hand-written sample candidate (not LLM output)
// PKB 73 (vocab-parallel cross-entropy), baseline: a block per row. Kernel 1 writes the row maxima
// into a symmetric buffer; after a host barrier kernel 2 reduces the peers' maxima, shifts the
// logits in place and publishes the target logit and sum of exp; after another barrier kernel 3
// sums the peers' parts into the loss.
#include "pkbw/solution.h"

#include <cstdint>
#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 128;

__device__ float block_sum(float v) {
    __shared__ float part[kThreads];
    part[threadIdx.x] = v;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] += part[threadIdx.x + step];
        __syncthreads();
    }
    return part[0];
}

__device__ float block_max(float v) {
    __shared__ float part[kThreads];
    part[threadIdx.x] = v;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + step]);
        __syncthreads();
    }
    return part[0];
}

__global__ void row_max(const __nv_bfloat16* logits, float* maxima, long long local) {
    float m = -INFINITY;
    for (long long j = threadIdx.x; j < local; j += kThreads)
        m = fmaxf(m, __bfloat162float(logits[blockIdx.x * local + j]));
    m = block_max(m);
    if (threadIdx.x == 0)
        maxima[blockIdx.x] = m;
}

__global__ void shift_and_sum(__nv_bfloat16* logits, void* const* maxima, int world,
                              const std::int64_t* target, float* parts, long long rows, long long local,
                              long long start) {
    const long long row = blockIdx.x;
    float m = -INFINITY;
    for (int r = 0; r < world; ++r)
        m = fmaxf(m, static_cast<const float*>(maxima[r])[row]);
    float sum = 0.f;
    for (long long j = threadIdx.x; j < local; j += kThreads) {
        const __nv_bfloat16 shifted = __float2bfloat16(__bfloat162float(logits[row * local + j]) - m);
        logits[row * local + j] = shifted;
        sum += __bfloat162float(__float2bfloat16(__expf(__bfloat162float(shifted))));
    }
    sum = block_sum(sum);
    if (threadIdx.x == 0) {
        const long long t = target[row] - start;
        parts[row] = (t >= 0 && t < local) ? __bfloat162float(logits[row * local + t]) : 0.f;
        parts[rows + row] = __bfloat162float(__float2bfloat16(sum));
    }
}

__global__ void finish(void* const* parts, int world, __nv_bfloat16* out, long long rows) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i >= rows)
        return;
    float predicted = 0.f, sum = 0.f;
    for (int r = 0; r < world; ++r) {
        predicted += static_cast<const float*>(parts[r])[i];
        sum += static_cast<const float*>(parts[r])[rows + i];
    }
    out[i] = __float2bfloat16(logf(sum) - predicted);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (in.dtype != pkbw::DType::BF16) {
        return ctx.fail("cross-entropy baseline: bf16 only");
    }
    const long long local = in.shape[in.ndim - 1];
    const long long rows = in.numel() / local;
    const pkbw::SymmetricMemory maxima = ctx.symmetric("ce_base_max", rows * sizeof(float));
    const pkbw::SymmetricMemory parts = ctx.symmetric("ce_base_parts", 2 * rows * sizeof(float));
    const unsigned grid = static_cast<unsigned>(rows);
    row_max<<<grid, kThreads, 0, ctx.stream()>>>(in.as<const __nv_bfloat16>(),
                                                 static_cast<float*>(maxima.local), local);
    ctx.barrier();
    shift_and_sum<<<grid, kThreads, 0, ctx.stream()>>>(
        in.as<__nv_bfloat16>(), maxima.peers_device, ctx.world_size, ctx.input(1).as<const std::int64_t>(),
        static_cast<float*>(parts.local), rows, local, ctx.rank * local);
    ctx.barrier();
    finish<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, ctx.stream()>>>(
        parts.peers_device, ctx.world_size, ctx.output(0).as<__nv_bfloat16>(), rows);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
