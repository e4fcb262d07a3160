// Reference for PKB problem 9: one kernel for the column sums (fp32 accumulation of the dtype-rounded
// products, as torch's sum over a bf16 tensor), results in the dtype, then two ncclAllReduce calls.
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

// Block = 32 columns x 32 row lanes; lanes stride over rows, then a shared-memory tree per column.
template <class T>
__global__ void column_sums(const T* x, const T* dy, T* d_gamma, T* d_beta, long long m, long long n) {
    __shared__ float sg[32][33];
    __shared__ float sb[32][33];
    const long long col = blockIdx.x * 32LL + threadIdx.x;
    float g = 0.f, b = 0.f;
    if (col < n) {
        for (long long row = threadIdx.y; row < m; row += 32) {
            const T d = dy[row * n + col];
            g += to_float(from_float<T>(to_float(d) * to_float(x[row * n + col])));
            b += to_float(d);
        }
    }
    sg[threadIdx.y][threadIdx.x] = g;
    sb[threadIdx.y][threadIdx.x] = b;
    __syncthreads();
    for (int step = 16; step > 0; step >>= 1) {
        if (threadIdx.y < step) {
            sg[threadIdx.y][threadIdx.x] += sg[threadIdx.y + step][threadIdx.x];
            sb[threadIdx.y][threadIdx.x] += sb[threadIdx.y + step][threadIdx.x];
        }
        __syncthreads();
    }
    if (threadIdx.y == 0 && col < n) {
        d_gamma[col] = from_float<T>(sg[0][threadIdx.x]);
        d_beta[col] = from_float<T>(sb[0][threadIdx.x]);
    }
}

template <class T>
void launch(const pkbw::Context& ctx, void* g, void* b) {
    const pkbw::TensorView& x = ctx.input(0);
    const long long m = x.shape[0], n = x.shape[1];
    column_sums<T><<<static_cast<unsigned>((n + 31) / 32), dim3(32, 32), 0, ctx.stream()>>>(
        x.as<const T>(), ctx.input(1).as<const T>(), static_cast<T*>(g), static_cast<T*>(b), m, n);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& d_gamma = ctx.output(0);
    const pkbw::TensorView& d_beta = ctx.output(1);
    void* g = ctx.scratch("lnb_gamma", d_gamma.nbytes());
    void* b = ctx.scratch("lnb_beta", d_beta.nbytes());
    switch (d_gamma.dtype) {
    case pkbw::DType::BF16:
        launch<__nv_bfloat16>(ctx, g, b);
        break;
    case pkbw::DType::F16:
        launch<__half>(ctx, g, b);
        break;
    case pkbw::DType::F32:
        launch<float>(ctx, g, b);
        break;
    default:
        return ctx.fail("9_layernorm_backward reference: dtype must be bf16, f16 or f32");
    }
    const ncclDataType_t type = pkbw::nccl_dtype(d_gamma.dtype);
    const size_t n = static_cast<size_t>(d_gamma.numel());
    ncclResult_t rc = ncclAllReduce(b, d_beta.data, n, type, ncclSum, ctx.nccl(), ctx.stream());
    if (rc == ncclSuccess) {
        rc = ncclAllReduce(g, d_gamma.data, n, type, ncclSum, ctx.nccl(), ctx.stream());
    }
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
