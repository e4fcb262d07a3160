// Hand-written sample candidate (not LLM output)
// PKB 1 (all-reduce, sum), baseline: every rank copies its input into a symmetric buffer, a host
// barrier publishes it, and one kernel sums all ranks' buffers through peer pointers.
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

__device__ float to_float(float v) {
    return v;
}
__device__ float to_float(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
__device__ float to_float(__half v) {
    return __half2float(v);
}
template <class T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) {
    return v;
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16(v);
}
template <>
__device__ __half from_float<__half>(float v) {
    return __float2half(v);
}

template <class T>
__global__ void sum_peers(void* const* peers, int world, T* out, long long count) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float sum = 0.f;
        for (int r = 0; r < world; ++r) {
            sum += to_float(static_cast<const T*>(peers[r])[i]);
        }
        out[i] = from_float<T>(sum);
    }
}

template <class T>
void launch(const pkbw::Context& ctx, const pkbw::SymmetricMemory& sym, long long count) {
    const int threads = 256;
    const long long wanted = (count + threads - 1) / threads;
    const int blocks = static_cast<int>(wanted < 1024 ? (wanted > 0 ? wanted : 1) : 1024);
    sum_peers<T><<<blocks, threads, 0, ctx.stream()>>>(sym.peers_device, ctx.world_size,
                                                       ctx.output(0).as<T>(), count);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("allreduce_baseline", in.nbytes());
    cudaMemcpyAsync(sym.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier(); // every rank's copy is complete
    switch (in.dtype) {
    case pkbw::DType::BF16:
        launch<__nv_bfloat16>(ctx, sym, in.numel());
        break;
    case pkbw::DType::F16:
        launch<__half>(ctx, sym, in.numel());
        break;
    case pkbw::DType::F32:
        launch<float>(ctx, sym, in.numel());
        break;
    default:
        return ctx.fail("allreduce baseline: only bf16, f16 and f32 are supported");
    }
    // No rank may overwrite its buffer (next call) while a peer still reads it.
    ctx.barrier();
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
