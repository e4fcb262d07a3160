// Shared by the adversarial CUDA candidates (each case is one .cu file that includes this): a plain,
// correct all-reduce and all-gather for bf16/f16/f32 through symmetric memory, so that each case
// differs from a good solution only in its one misbehaviour.
#pragma once

#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace adversarial {

__device__ inline float load(const void* p, long long i, pkbw::DType t) {
    if (t == pkbw::DType::BF16)
        return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    if (t == pkbw::DType::F16)
        return __half2float(static_cast<const __half*>(p)[i]);
    return static_cast<const float*>(p)[i];
}

__device__ inline void store(void* p, long long i, pkbw::DType t, float v) {
    if (t == pkbw::DType::BF16)
        static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
    else if (t == pkbw::DType::F16)
        static_cast<__half*>(p)[i] = __float2half(v);
    else
        static_cast<float*>(p)[i] = v;
}

__global__ void sum_peers(void* const* peers, int world, void* out, long long count, pkbw::DType t) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float sum = 0.f;
        for (int r = 0; r < world; ++r)
            sum += load(peers[r], i, t);
        store(out, i, t, sum);
    }
}

// out = sum over ranks of input 0 (problem 1_allreduce). Returns the solution's status.
inline int all_reduce(const pkbw::Context& ctx, const char* name) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric(name, in.nbytes());
    cudaMemcpyAsync(sym.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    sum_peers<<<264, 512, 0, ctx.stream()>>>(sym.peers_device, ctx.world_size, ctx.output(0).data, in.numel(),
                                             in.dtype);
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}

// out[r] = input of rank r (problem 2_allgather).
inline int all_gather(const pkbw::Context& ctx, const char* name) {
    const pkbw::TensorView& in = ctx.input(0);
    const std::size_t bytes = in.nbytes();
    const pkbw::SymmetricMemory sym = ctx.symmetric(name, bytes);
    cudaMemcpyAsync(sym.local, in.data, bytes, cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    for (int r = 0; r < ctx.world_size; ++r)
        cudaMemcpyAsync(static_cast<char*>(ctx.output(0).data) + r * bytes, sym.peers[r], bytes,
                        cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}

} // namespace adversarial
