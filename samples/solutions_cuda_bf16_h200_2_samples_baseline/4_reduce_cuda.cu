// Hand-written sample candidate (not LLM output)
// PKB 4 (reduce onto dst), baseline: every rank publishes its input in a symmetric buffer; the
// destination sums all buffers through peer pointers, the others return their input unchanged
// (PKB compares non-root outputs too).
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

// out[i] = sum over ranks r of peers[r][offset + i], in rank order.
template <class T>
__global__ void sum_peers(void* const* peers, int world, long long offset, T* out, long long count) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float sum = 0.f;
        for (int r = 0; r < world; ++r) {
            sum += to_float(static_cast<const T*>(peers[r])[offset + i]);
        }
        out[i] = from_float<T>(sum);
    }
}

template <class T>
void launch(const pkbw::Context& ctx, void* const* peers, long long offset, long long count) {
    const long long wanted = (count + 255) / 256;
    const int blocks = static_cast<int>(wanted < 1024 ? (wanted > 0 ? wanted : 1) : 1024);
    sum_peers<T>
        <<<blocks, 256, 0, ctx.stream()>>>(peers, ctx.world_size, offset, ctx.output(0).as<T>(), count);
}

bool sum_into_output(const pkbw::Context& ctx, void* const* peers, long long offset, long long count) {
    switch (ctx.output(0).dtype) {
    case pkbw::DType::BF16:
        launch<__nv_bfloat16>(ctx, peers, offset, count);
        return true;
    case pkbw::DType::F16:
        launch<__half>(ctx, peers, offset, count);
        return true;
    case pkbw::DType::F32:
        launch<float>(ctx, peers, offset, count);
        return true;
    default:
        return false;
    }
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("reduce_baseline", in.nbytes());
    cudaMemcpyAsync(sym.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    ctx.barrier();
    const int dst = static_cast<int>(ctx.param("dst", 0));
    if (ctx.rank == dst) {
        if (!sum_into_output(ctx, sym.peers_device, 0, in.numel())) {
            ctx.barrier();
            return ctx.fail("reduce baseline: only bf16, f16 and f32 are supported");
        }
    } else {
        cudaMemcpyAsync(ctx.output(0).data, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, ctx.stream());
    }
    ctx.barrier(); // peers finish reading before anyone's next call overwrites its buffer
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
