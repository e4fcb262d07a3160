// Gradient clipping by a global norm on the device for references (pkbw reference toolkit; PKB 21, 22):
// norm = sqrt(total) from a device fp32 sum of squares, written to a 0-dim fp32 output, and every
// gradient multiplied in place by max_norm / norm when norm > max_norm (PKB's t.mul_(coef) with an
// fp32 coefficient, rounded to the gradient's dtype).
//
//     PKBW_TRY(pkbw::tk::clip_by_total(ctx, grads, count, total, norm_out, max_norm));
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {

inline constexpr int kMaxClipTensors = 8;

namespace detail {

template <class T>
struct ClipTensors {
    T* data[kMaxClipTensors];
    long long numel[kMaxClipTensors];
    int count;
};

template <class T>
__global__ void clip_kernel(ClipTensors<T> grads, const float* total, float* norm_out, float max_norm) {
    const float norm = sqrtf(*total);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *norm_out = norm;
    if (!(norm > max_norm))
        return;
    const float coef = max_norm / norm;
    for (int k = 0; k < grads.count; ++k)
        for (long long i = PKBW_GRID_STRIDE_BEGIN; i < grads.numel[k]; i += PKBW_GRID_STRIDE_STEP)
            grads.data[k][i] = from_float<T>(to_float(grads.data[k][i]) * coef);
}

} // namespace detail

// grads: `count` (1..8) tensors of one floating dtype, scaled in place; total: device fp32 Σ‖g‖²;
// norm_out: device fp32 scalar.
inline int clip_by_total(const Context& ctx, const TensorView* const* grads, int count, const float* total,
                         float* norm_out, float max_norm) {
    if (count < 1 || count > kMaxClipTensors)
        return ctx.fail("pkbw::tk::clip_by_total: between 1 and 8 tensors");
    return dispatch_float(ctx, grads[0]->dtype, "pkbw::tk::clip_by_total", [&](auto tag) {
        using T = typename decltype(tag)::type;
        detail::ClipTensors<T> list{};
        list.count = count;
        long long largest = 1;
        for (int k = 0; k < count; ++k) {
            if (grads[k]->dtype != grads[0]->dtype)
                return ctx.fail("pkbw::tk::clip_by_total: the tensors must share one dtype");
            list.data[k] = grads[k]->template as<T>();
            list.numel[k] = grads[k]->numel();
            largest = list.numel[k] > largest ? list.numel[k] : largest;
        }
        detail::clip_kernel<T><<<grid_for(largest), 256, 0, ctx.stream()>>>(list, total, norm_out, max_norm);
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    });
}

} // namespace pkbw::tk
