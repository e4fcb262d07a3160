// Reference for PKB problem 46: cuBLAS GEMM of the shard (logits rounded to the dtype, as PKB's
// matmul), a bias kernel (second rounding), ncclAllGather into [W, t, V/W] scratch, and a copy
// kernel that lays the gathered shards out along the vocabulary ([t, V]).
#include "pkbw/solution.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

cublasHandle_t handle() {
    // One per process, never destroyed (a static destructor can run after the CUDA context is gone).
    static cublasHandle_t h = [] {
        cublasHandle_t created = nullptr;
        cublasCreate(&created);
        return created;
    }();
    return h;
}

template <class T>
__device__ float to_f(T v) {
    return static_cast<float>(v);
}
template <>
__device__ float to_f(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <class T>
__device__ T from_f(float v) {
    return static_cast<T>(v);
}
template <>
__device__ __nv_bfloat16 from_f(float v) {
    return __float2bfloat16(v);
}
template <>
__device__ __half from_f(float v) {
    return __float2half(v);
}

template <class T>
__global__ void add_bias(T* logits, const T* bias, long long tokens, long long local) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i < tokens * local)
        logits[i] = from_f<T>(to_f(logits[i]) + to_f(bias[i % local]));
}

// gathered [W, t, local] -> out [t, W*local]
template <class T>
__global__ void interleave(const T* gathered, T* out, long long world, long long tokens, long long local) {
    const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (i >= world * tokens * local)
        return;
    const long long v = i % local, t = (i / local) % tokens, r = i / (local * tokens);
    out[t * world * local + r * local + v] = gathered[i];
}

template <class T>
int run(const pkbw::Context& ctx, cudaDataType_t type) {
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const long long tokens = h.shape[0], hidden = h.shape[1], local = w.shape[0];
    const std::size_t shard_bytes = static_cast<std::size_t>(tokens * local) * sizeof(T);
    auto* mine = static_cast<T*>(ctx.scratch("gemv_local", shard_bytes));
    auto* gathered = static_cast<T*>(ctx.scratch("gemv_gathered", shard_bytes * ctx.world_size));
    // Row-major logits[t, local] = h[t, H] · W[local, H]ᵀ is column-major logitsᵀ = W' · hᵀ with W'
    // the transpose of the column-major view of W.
    const float alpha = 1.f, beta = 0.f;
    cublasSetStream(handle(), ctx.stream());
    if (cublasGemmEx(handle(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(local), static_cast<int>(tokens),
                     static_cast<int>(hidden), &alpha, w.data, type, static_cast<int>(hidden), h.data, type,
                     static_cast<int>(hidden), &beta, mine, type, static_cast<int>(local), CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
        return ctx.fail("46_gemv_decode reference: cublasGemmEx failed");
    }
    const long long count = tokens * local;
    add_bias<T><<<static_cast<unsigned>((count + 255) / 256), 256, 0, ctx.stream()>>>(
        mine, ctx.input(2).as<const T>(), tokens, local);
    if (ncclAllGather(mine, gathered, static_cast<std::size_t>(count), pkbw::nccl_dtype(h.dtype), ctx.nccl(),
                      ctx.stream()) != ncclSuccess) {
        return ctx.fail("46_gemv_decode reference: ncclAllGather failed");
    }
    const long long total = count * ctx.world_size;
    interleave<T><<<static_cast<unsigned>((total + 255) / 256), 256, 0, ctx.stream()>>>(
        gathered, ctx.output(0).as<T>(), ctx.world_size, tokens, local);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        return run<__nv_bfloat16>(ctx, CUDA_R_16BF);
    case pkbw::DType::F16:
        return run<__half>(ctx, CUDA_R_16F);
    case pkbw::DType::F32:
        return run<float>(ctx, CUDA_R_32F);
    default:
        return ctx.fail("46_gemv_decode reference: dtype must be bf16, f16 or f32");
    }
}
