// Hand-written sample candidate (not LLM output)
// PKB 45 (reduce-scatter of a flat [W*rows*hidden] bf16 input, divided by W in bf16, fp32 RMSNorm of
// the [rows, hidden] shard times gamma), baseline: copy the input into a symmetric buffer, host
// barrier, one block per row sums this rank's chunk over the peers and normalises it, host barrier
// before the buffer is reused.
#include "pkbw/solution.h"

#include <cuda_bf16.h>

namespace {

constexpr int kThreads = 128;

__global__ void reduce_norm(void* const* peers, int world, long long chunk_offset, const __nv_bfloat16* gamma,
                            __nv_bfloat16* out, long long hidden, float eps) {
    __shared__ float part[kThreads];
    __shared__ float values[1024];
    const long long row = blockIdx.x;
    float s = 0.f;
    for (long long j = threadIdx.x; j < hidden; j += kThreads) {
        float v = 0.f;
        for (int r = 0; r < world; ++r)
            v += __bfloat162float(
                static_cast<const __nv_bfloat16*>(peers[r])[chunk_offset + row * hidden + j]);
        // PKB: the sum and the division by W are bf16 tensors.
        v = __bfloat162float(
            __float2bfloat16(__bfloat162float(__float2bfloat16(v)) / static_cast<float>(world)));
        values[j] = v;
        s += v * v;
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] += part[threadIdx.x + step];
        __syncthreads();
    }
    const float rms = rsqrtf(part[0] / static_cast<float>(hidden) + eps);
    for (long long j = threadIdx.x; j < hidden; j += kThreads)
        out[row * hidden + j] = __float2bfloat16(values[j] * rms * __bfloat162float(gamma[j]));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const long long rows = ctx.output(0).shape[0], hidden = ctx.output(0).shape[1];
    if (in.dtype != pkbw::DType::BF16 || hidden > 1024) {
        return ctx.fail("this sample handles bf16 rows of at most 1024");
    }
    const pkbw::SymmetricMemory shared = ctx.symmetric("rs_rmsnorm_baseline", in.nbytes());
    cudaMemcpyAsync(shared.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    reduce_norm<<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream()>>>(
        shared.peers_device, ctx.world_size, ctx.rank * rows * hidden, ctx.input(1).as<const __nv_bfloat16>(),
        ctx.output(0).as<__nv_bfloat16>(), hidden, static_cast<float>(ctx.param("eps", 1e-5)));
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
