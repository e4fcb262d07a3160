// Batched 1-D complex FFTs along one axis on cuFFT (59, 60), on fft_conv.cuh's plan cache.
//
//   fft_axis(ctx, axis, in, out, direction, scale)
//       every line of the contiguous complex64 array [outer, n, inner] (fft_axis.h) transformed along
//       n (CUFFT_FORWARD or CUFFT_INVERSE, unscaled as cuFFT computes it), then multiplied by `scale`
//       as torch's _fft_apply_normalization does (no multiplication when scale is 1). in == out is an
//       in-place transform; otherwise `in` is left unchanged (C2C does not overwrite its input).
//   real_to_complex(ctx, x, c, count)   c = (x, 0): torch.fft.fft's promotion of a real fp32 input
//   complex_real_part(ctx, c, x, count) x = c.real
//
// One cufftPlanMany batch covers the longer of the outer and inner extents and the plan is executed
// once per index of the shorter one, so neither a [B, n, 1] nor a [1, n, B] layout needs a transpose.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/fft_axis.h"
#include "pkbw/toolkit/fft_conv.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cufft.h>

namespace pkbw::tk {

namespace detail {

static __global__ void scale_complex(cufftComplex* data, long long count, float scale) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        data[i] = {__fmul_rn(data[i].x, scale), __fmul_rn(data[i].y, scale)};
    }
}

static __global__ void widen_real(const float* x, cufftComplex* c, long long count) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        c[i] = {x[i], 0.f};
    }
}

static __global__ void take_real(const cufftComplex* c, float* x, long long count) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        x[i] = c[i].x;
    }
}

} // namespace detail

inline int fft_axis(const Context& ctx, const FftAxis& axis, const cufftComplex* in, cufftComplex* out,
                    int direction, float scale) {
    if (axis.n < 1 || axis.outer < 1 || axis.inner < 1) {
        return ctx.fail("fft_axis: empty or negative extent");
    }
    int device = 0;
    PKBW_CHECK(ctx, cudaGetDevice(&device));
    // Batch over inner (lines interleaved, stride inner) and loop over outer, or the other way round.
    const bool batch_inner = axis.inner >= axis.outer;
    const long long stride = axis.inner, block = axis.n * axis.inner;
    const long long batch = batch_inner ? axis.inner : axis.outer, dist = batch_inner ? 1 : block;
    const long long runs = batch_inner ? axis.outer : axis.inner, run_step = batch_inner ? block : 1;
    cufftHandle plan = 0;
    PKBW_TRY(fft_plan(ctx, {CUFFT_C2C, axis.n, batch, stride, dist, stride, dist, device}, plan));
    // cufftExecC2C takes a non-const input; an out-of-place C2C transform does not write it.
    auto* source = const_cast<cufftComplex*>(in);
    for (long long r = 0; r < runs; ++r) {
        PKBW_CHECK(ctx, cufftExecC2C(plan, source + r * run_step, out + r * run_step, direction));
    }
    if (scale != 1.f) {
        detail::scale_complex<<<grid_for(axis.count()), 256, 0, ctx.stream()>>>(out, axis.count(), scale);
    }
    return finish(ctx);
}

inline int real_to_complex(const Context& ctx, const float* x, cufftComplex* c, long long count) {
    detail::widen_real<<<grid_for(count), 256, 0, ctx.stream()>>>(x, c, count);
    return finish(ctx);
}

inline int complex_real_part(const Context& ctx, const cufftComplex* c, float* x, long long count) {
    detail::take_real<<<grid_for(count), 256, 0, ctx.stream()>>>(c, x, count);
    return finish(ctx);
}

} // namespace pkbw::tk
