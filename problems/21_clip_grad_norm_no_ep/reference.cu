// Reference for PKB problem 21: fp32 sum of squares of the three grads (block partials, atomically
// added into one fp32 scalar), ncclAllReduce of that scalar over WORLD, then one kernel that takes
// the square root, writes the norm and scales the grads in place by max_norm / norm when the norm
// exceeds max_norm (PKB's t.mul_(coef) with an fp32 coef, rounded to the grad dtype).
#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace {

constexpr int kThreads = 256;
constexpr int kMaxGrads = 8;

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

struct Grads {
    void* data[kMaxGrads];
    long long numel[kMaxGrads];
    int count;
};

template <class T>
__global__ void sum_squares(Grads grads, float* total) {
    __shared__ float part[kThreads];
    float s = 0.f;
    for (int k = 0; k < grads.count; ++k) {
        const T* g = static_cast<const T*>(grads.data[k]);
        for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < grads.numel[k];
             i += static_cast<long long>(gridDim.x) * kThreads) {
            const float v = to_float(g[i]);
            s += v * v;
        }
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step)
            part[threadIdx.x] += part[threadIdx.x + step];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(total, part[0]);
}

template <class T>
__global__ void finish(Grads grads, const float* total, float* norm_out, float max_norm) {
    const float norm = sqrtf(*total);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *norm_out = norm;
    if (!(norm > max_norm))
        return;
    const float coef = max_norm / norm;
    for (int k = 0; k < grads.count; ++k) {
        T* g = static_cast<T*>(grads.data[k]);
        for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < grads.numel[k];
             i += static_cast<long long>(gridDim.x) * kThreads)
            g[i] = from_float<T>(to_float(g[i]) * coef);
    }
}

template <class T>
int run(const pkbw::Context& ctx, const Grads& grads) {
    float* total = static_cast<float*>(ctx.scratch("clip21_total", sizeof(float)));
    cudaMemsetAsync(total, 0, sizeof(float), ctx.stream());
    sum_squares<T><<<264, kThreads, 0, ctx.stream()>>>(grads, total);
    const ncclResult_t rc = ncclAllReduce(total, total, 1, ncclFloat32, ncclSum, ctx.nccl(), ctx.stream());
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    finish<T><<<264, kThreads, 0, ctx.stream()>>>(grads, total, ctx.output(0).as<float>(),
                                                  static_cast<float>(ctx.param("max_norm", 1.0)));
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.param("norm_type", 2.0) != 2.0) {
        return ctx.fail("21 reference: only norm_type 2 is implemented (PKB's only value)");
    }
    if (ctx.num_inputs > kMaxGrads) {
        return ctx.fail("21 reference: too many gradient tensors");
    }
    Grads grads{};
    grads.count = ctx.num_inputs;
    for (int k = 0; k < ctx.num_inputs; ++k) {
        grads.data[k] = ctx.input(k).data;
        grads.numel[k] = ctx.input(k).numel();
    }
    int rc = 0;
    switch (ctx.input(0).dtype) {
    case pkbw::DType::BF16:
        rc = run<__nv_bfloat16>(ctx, grads);
        break;
    case pkbw::DType::F16:
        rc = run<__half>(ctx, grads);
        break;
    case pkbw::DType::F32:
        rc = run<float>(ctx, grads);
        break;
    default:
        return ctx.fail("21 reference: dtype must be bf16, f16 or f32");
    }
    if (rc != 0) {
        return rc;
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
