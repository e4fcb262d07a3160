// Reference for PKB problem 45: ncclReduceScatter (SUM in D) into a scratch shard, then one block
// per row: the value divided by W and rounded to D (PKB's in-place div_ on the D tensor), the fp32
// mean of squares, rsqrt(mean + eps), x * rms * gamma in fp32, rounded to D.
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 128;

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
__global__ void rms_norm_rows(const T* summed, const T* gamma, T* out, long long hidden, float world,
                              float eps) {
    __shared__ float part[kThreads];
    const T* row = summed + blockIdx.x * hidden;
    float s = 0.f;
    for (long long j = threadIdx.x; j < hidden; j += kThreads) {
        const float x = to_float(from_float<T>(to_float(row[j]) / world));
        s += x * x;
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] += part[threadIdx.x + step];
        __syncthreads();
    }
    const float rms = rsqrtf(part[0] / static_cast<float>(hidden) + eps);
    for (long long j = threadIdx.x; j < hidden; j += kThreads) {
        const float x = to_float(from_float<T>(to_float(row[j]) / world));
        out[blockIdx.x * hidden + j] = from_float<T>(x * rms * to_float(gamma[j]));
    }
}

template <class T>
int run(const pkbw::Context& ctx) {
    const pkbw::TensorView& out = ctx.output(0);
    const long long rows = out.shape[0], hidden = out.shape[1];
    T* summed = static_cast<T*>(ctx.scratch("rs45_summed", out.nbytes()));
    const ncclResult_t rc = ncclReduceScatter(ctx.input(0).data, summed, static_cast<size_t>(rows * hidden),
                                              pkbw::nccl_dtype(out.dtype), ncclSum, ctx.nccl(), ctx.stream());
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    rms_norm_rows<T><<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream()>>>(
        summed, ctx.input(1).as<const T>(), out.as<T>(), hidden, static_cast<float>(ctx.world_size),
        static_cast<float>(ctx.param("eps", 1e-5)));
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    int rc = 0;
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        rc = run<__nv_bfloat16>(ctx);
        break;
    case pkbw::DType::F16:
        rc = run<__half>(ctx);
        break;
    case pkbw::DType::F32:
        rc = run<float>(ctx);
        break;
    default:
        return ctx.fail("45 reference: dtype must be bf16, f16 or f32");
    }
    if (rc != 0) {
        return rc;
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
