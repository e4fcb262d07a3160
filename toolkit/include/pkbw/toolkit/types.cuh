// Element types on the device for references (pkbw reference toolkit): fp32 views of bf16/f16/f32,
// rounding back, a dispatch from a DType to the C++ type, and grid sizes for grid-stride loops.
#pragma once

#include "pkbw/solution.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace pkbw::tk {

__device__ __forceinline__ float to_float(float v) {
    return v;
}
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
__device__ __forceinline__ float to_float(__half v) {
    return __half2float(v);
}

// Rounds an fp32 value to T (round to nearest even, as PyTorch's casts).
template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
    return __float2half(v);
}

// What PyTorch's eager elementwise op on a T tensor stores: the fp32 result rounded to T, read back.
template <class T>
__device__ __forceinline__ float round_as(float v) {
    return to_float(from_float<T>(v));
}

template <class T>
struct TypeTag {
    using type = T;
};

// Calls f(TypeTag<T>{}) with T = __nv_bfloat16, __half or float for `dtype` and returns its int, or
// ctx.fail("<who>: dtype must be bf16, f16 or f32"). In f: `using T = typename decltype(tag)::type;`.
template <class F>
int dispatch_float(const Context& ctx, DType dtype, const char* who, F&& f) {
    switch (dtype) {
    case DType::BF16:
        return f(TypeTag<__nv_bfloat16>{});
    case DType::F16:
        return f(TypeTag<__half>{});
    case DType::F32:
        return f(TypeTag<float>{});
    default:
        break;
    }
    char message[256];
    snprintf(message, sizeof message, "%s: dtype must be bf16, f16 or f32", who);
    return ctx.fail(message);
}

// Blocks for a grid-stride loop over `total` items: enough to cover them, at most `cap`, at least 1.
inline unsigned grid_for(long long total, int threads = 256, long long cap = 8192) {
    const long long blocks = (total + threads - 1) / threads;
    return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

} // namespace pkbw::tk

// for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
#define PKBW_GRID_STRIDE_BEGIN (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x)
#define PKBW_GRID_STRIDE_STEP (static_cast<long long>(gridDim.x) * blockDim.x)

namespace pkbw::tk {

// Element i of a bf16/f16/f32/f64 array whose dtype is known only at run time, as fp32 (f64 is rounded);
// 0 for other dtypes.
__device__ __forceinline__ float load_as_float(const void* data, DType dtype, long long i) {
    switch (dtype) {
    case DType::F32:
        return static_cast<const float*>(data)[i];
    case DType::BF16:
        return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
    case DType::F16:
        return __half2float(static_cast<const __half*>(data)[i]);
    case DType::F64:
        return static_cast<float>(static_cast<const double*>(data)[i]);
    default:
        return 0.f;
    }
}

} // namespace pkbw::tk
