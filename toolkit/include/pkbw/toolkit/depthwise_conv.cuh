// Depthwise causal conv1d with a halo for references (pkbw reference toolkit; PKB 71, later 72's
// short filters): F.conv1d(cat([halo, x], -1), w, groups = channels) without padding, so output t of a
// row reads the K−1 halo values and then x up to t:
//     y[row, t] = Σ_k w[c, k] · src[row, t + k],  src = halo[row, 0..K−1) ‖ x[row, 0..L),  c = row % C.
// Rows are (batch, channel) sequences; x and y rows are `row_stride` elements apart (a chunk of a
// longer row), the halo is [rows, K−1] contiguous; fp32 accumulation in tap order, one rounding to T.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {

struct DepthwiseConv {
    long long rows = 0, channels = 0, length = 0, taps = 0;
    long long row_stride = 0; // elements between rows of x and of y
};

namespace conv_detail {

template <class T>
__global__ void depthwise_causal_kernel(DepthwiseConv cv, const T* x, const T* halo, const T* w, T* y) {
    const long long total = cv.rows * cv.length, pad = cv.taps - 1;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        const long long row = i / cv.length, t = i % cv.length;
        const T* wc = w + (row % cv.channels) * cv.taps;
        float acc = 0.f;
        for (long long k = 0; k < cv.taps; ++k) {
            const long long s = t + k; // position in halo ‖ x
            const T v = s < pad ? halo[row * pad + s] : x[row * cv.row_stride + s - pad];
            acc += to_float(wc[k]) * to_float(v);
        }
        y[row * cv.row_stride + t] = from_float<T>(acc);
    }
}

} // namespace conv_detail

template <class T>
int depthwise_causal_conv(const Context& ctx, const DepthwiseConv& cv, const T* x, const T* halo, const T* w,
                          T* y) {
    conv_detail::depthwise_causal_kernel<T>
        <<<grid_for(cv.rows * cv.length), 256, 0, ctx.stream()>>>(cv, x, halo, w, y);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

} // namespace pkbw::tk
