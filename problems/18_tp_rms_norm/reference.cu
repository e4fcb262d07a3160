// Reference for PKB problem 18: per-row fp32 sum of squares, ncclAllReduce of the [M] sums (fp32, in
// place), then h * rsqrt(sum / (W*N) + eps) rounded to the dtype and multiplied by the weight.
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

constexpr int kThreads = 256;

template <class T>
__global__ void row_sum_squares(const T* h, float* sums, long long n) {
    __shared__ float part[kThreads];
    const T* row = h + blockIdx.x * n;
    float s = 0.f;
    for (long long j = threadIdx.x; j < n; j += kThreads) {
        const float v = to_float(row[j]);
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

template <class T>
__global__ void normalise(const T* h, const T* w, const float* sums, T* out, long long n, float inv_hidden,
                          float eps) {
    const float scale = rsqrtf(sums[blockIdx.x] * inv_hidden + eps);
    for (long long j = threadIdx.x; j < n; j += kThreads) {
        const long long i = blockIdx.x * n + j;
        const T normed = from_float<T>(to_float(h[i]) * scale);
        out[i] = from_float<T>(to_float(w[j]) * to_float(normed));
    }
}

template <class T>
int run(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const long long m = h.shape[0], n = h.shape[1];
    const float eps = static_cast<float>(ctx.param("variance_epsilon", 1e-5));
    float* sums = static_cast<float*>(ctx.scratch("rms_sums", static_cast<std::size_t>(m) * sizeof(float)));
    row_sum_squares<T><<<static_cast<unsigned>(m), kThreads, 0, ctx.stream()>>>(h.as<const T>(), sums, n);
    const ncclResult_t rc =
        ncclAllReduce(sums, sums, static_cast<size_t>(m), ncclFloat32, ncclSum, ctx.nccl(), ctx.stream());
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    const float inv_hidden = 1.0f / static_cast<float>(n * ctx.world_size);
    normalise<T><<<static_cast<unsigned>(m), kThreads, 0, ctx.stream()>>>(
        h.as<const T>(), ctx.input(1).as<const T>(), sums, ctx.output(0).as<T>(), n, inv_hidden, eps);
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
        return ctx.fail("18_tp_rms_norm reference: dtype must be bf16, f16 or f32");
    }
    if (rc != 0) {
        return rc;
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
