// Delayed-scaling e4m3 round trip on the device for references (pkbw reference toolkit; PKB 52, 53):
// the tensor's absmax pushed into a rolled amax history, scale = max(history) / 448, and
// x -> (e4m3(x / scale) * scale) in the tensor's dtype, with torch's CUDA arithmetic:
//
//     PKBW_TRY(pkbw::tk::fp8_delayed_round_trip(ctx, x.dtype, x.data, x.numel(), history_in, history_out,
//     recon));
//
// - absmax in fp32 (toolkit row_reduce AbsMax over one row), stored into the bf16 history;
// - scale = fp32(max(history)) * fp32(1/448): torch divides a CUDA tensor by a Python scalar as a
//   multiplication by the fp32 reciprocal;
// - x / scale a true fp32 division (scale is a device tensor there), e4m3 with c10's rule
//   (fp8.h: RNE, NaN above 464), back to fp32, times scale, rounded to the dtype.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/fp8.h"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cuda_bf16.h>

namespace pkbw::tk {

inline constexpr float kE4m3Max = 448.0f;

namespace detail {

// One thread: history_out = roll(history_in, -1) with the last entry bf16(absmax); *scale =
// max(history_out) (clamped at 1e-12) * (1/448).
__global__ void fp8_history_kernel(const __nv_bfloat16* history_in, __nv_bfloat16* history_out, int length,
                                   const float* absmax, float* scale) {
    float largest = -INFINITY;
    for (int i = 0; i < length; ++i) {
        const __nv_bfloat16 v = i + 1 < length ? history_in[i + 1] : __float2bfloat16(*absmax);
        history_out[i] = v;
        const float f = __bfloat162float(v);
        largest = (f > largest || f != f) ? f : largest; // NaN-propagating, as torch.max
    }
    *scale = fmaxf(largest, 1e-12f) * (1.0f / kE4m3Max);
}

template <class T>
__global__ void fp8_round_trip_kernel(const T* x, long long n, const float* scale_ptr, T* out) {
    const float scale = *scale_ptr;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        const float q = e4m3_round_trip(__fdiv_rn(to_float(x[i]), scale));
        out[i] = from_float<T>(q * scale);
    }
}

} // namespace detail

// recon[0..n) (dtype, device) = the round trip of x; history_out [length] (bf16, device) = the rolled
// history with x's absmax appended. history_in and history_out may not alias. Uses
// ctx.scratch("pkbw_tk_fp8_scaling") for the absmax and the scale.
inline int fp8_delayed_round_trip(const Context& ctx, DType dtype, const void* x, long long n,
                                  const void* history_in, void* history_out, int history_length,
                                  void* recon) {
    float* values = static_cast<float*>(ctx.scratch("pkbw_tk_fp8_scaling", 2 * sizeof(float)));
    PKBW_TRY(row_reduce(ctx, dtype, RowOp::AbsMax, x, 1, n, values));
    detail::fp8_history_kernel<<<1, 1, 0, ctx.stream()>>>(static_cast<const __nv_bfloat16*>(history_in),
                                                          static_cast<__nv_bfloat16*>(history_out),
                                                          history_length, values, values + 1);
    PKBW_CHECK(ctx, cudaGetLastError());
    return dispatch_float(ctx, dtype, "pkbw::tk::fp8_delayed_round_trip", [&](auto tag) {
        using T = typename decltype(tag)::type;
        detail::fp8_round_trip_kernel<T><<<grid_for(n), 256, 0, ctx.stream()>>>(
            static_cast<const T*>(x), n, values + 1, static_cast<T*>(recon));
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    });
}

} // namespace pkbw::tk
