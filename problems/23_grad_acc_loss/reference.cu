// Reference for PKB problem 23: a one-thread kernel computes loss * local (in D), ncclAllReduce sums
// it in D in place (as PKB's all_reduce of a D tensor), a second one-thread kernel the normalised
// loss and the backward coefficient, every operation rounded to D.
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
// One torch op in D: compute in fp32, round to D.
template <class T>
__device__ float op(float v) {
    return to_float(from_float<T>(v));
}

template <class T>
__global__ void local_sum(const T* loss, const long long* local, T* loss_sum) {
    float l = to_float(*loss);
    if (*local == 0 && isnan(l))
        l = 0.f; // nan_to_num when this rank has no valid tokens
    *loss_sum = from_float<T>(l * op<T>(static_cast<float>(*local)));
}

template <class T>
__global__ void finish(const T* loss_sum, const long long* local, const long long* global, const T* g_norm,
                       const T* g_sum, T* normalized, T* grad) {
    const float lv = op<T>(static_cast<float>(*local));
    const float gv = op<T>(static_cast<float>(*global));
    *normalized = from_float<T>(to_float(*loss_sum) / gv);
    const float from_normalized = op<T>(op<T>(to_float(*g_norm) * lv) / gv);
    const float from_sum = op<T>(to_float(*g_sum) * lv);
    *grad = from_float<T>(from_normalized + from_sum);
}

template <class T>
int run(const pkbw::Context& ctx) {
    const auto* local = ctx.input(1).as<const long long>();
    T* loss_sum = ctx.output(1).as<T>();
    local_sum<T><<<1, 1, 0, ctx.stream()>>>(ctx.input(0).as<const T>(), local, loss_sum);
    const ncclResult_t rc = ncclAllReduce(loss_sum, loss_sum, 1, pkbw::nccl_dtype(ctx.output(1).dtype),
                                          ncclSum, ctx.nccl(), ctx.stream());
    if (rc != ncclSuccess) {
        return ctx.fail(ncclGetErrorString(rc));
    }
    finish<T><<<1, 1, 0, ctx.stream()>>>(loss_sum, local, ctx.input(2).as<const long long>(),
                                         ctx.input(3).as<const T>(), ctx.input(4).as<const T>(),
                                         ctx.output(0).as<T>(), ctx.output(2).as<T>());
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
        return ctx.fail("23 reference: dtype must be bf16, f16 or f32");
    }
    if (rc != 0) {
        return rc;
    }
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? 0 : ctx.fail(cudaGetErrorString(err));
}
