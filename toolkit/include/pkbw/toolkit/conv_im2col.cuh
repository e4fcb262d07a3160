// Dense convolution (groups = 1) as im2col + one cuBLAS GEMM per chunk of output positions, for
// references (87's 2-D conv on a halo-padded shard, 76's 3-D one). Float64 twin: conv_host.h.
//
//     pkbw::tk::ConvGeometry g = pkbw::tk::conv2d_geometry(C, Cout, H, W, 3, 3, 1, 1, 0, 1);
//     PKBW_TRY(pkbw::tk::conv_im2col<T>(ctx, g, 1, x, w, y));        // y = r(conv(x, w))
//     PKBW_TRY(pkbw::tk::add_channel_bias<T>(ctx, y, bias, 1, Cout, g.out_positions()));   // r(y + b)
//
// Numerics: the GEMM accumulates in fp32 (TF32 off, gemm.cuh) and rounds each output once to T, then
// the bias is a separate rounded add: torch's cuDNN path (at::cudnn_convolution, then output.add_(bias)).
// cuDNN itself allows TF32 for fp32 convolutions by default (torch.backends.cudnn.allow_tf32), this
// does not: fp32 outputs here are true fp32 sums. bf16 outputs of 87 at C = 1280 (K = 11,520) differ
// from the float64 oracle's in the last bit where the fp32 sum lands near a rounding boundary, and the
// separate bias add can make that two ulps (docs/problems.md, part 6).
// Memory: the im2col matrix [channels · taps, positions] is built for at most `max_col_elements` at a
// time (a column chunk), so a large image needs no scratch of its full size.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/conv_geometry.h"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/types.cuh"

#include <algorithm>
#include <type_traits>

namespace pkbw::tk {

namespace detail {

// col[row, j] = image[source(row, col0 + j)] (zero in the padding) for j < cols.
template <class T>
__global__ void im2col_kernel(const T* image, ConvGeometry g, long long col0, long long cols, T* col) {
    const long long total = g.col_rows() * cols;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        const long long row = i / cols, j = i % cols;
        const long long src = g.source(row, col0 + j);
        col[i] = src >= 0 ? image[src] : from_float<T>(0.f);
    }
}

template <class T>
__global__ void add_channel_bias_kernel(T* y, const T* bias, long long channels, long long positions,
                                        long long total) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP)
        y[i] = from_float<T>(to_float(y[i]) + to_float(bias[(i / positions) % channels]));
}

template <class T>
constexpr DType dtype_of() {
    if constexpr (sizeof(T) == 4)
        return DType::F32;
    else if constexpr (std::is_same_v<T, __half>)
        return DType::F16;
    else
        return DType::BF16;
}

// The im2col + GEMM loop of conv_im2col: column chunks of `chunk` output positions per image.
template <class T>
int conv_chunks(const Context& ctx, const ConvGeometry& g, long long batch, const T* x, const T* w, T* y,
                long long chunk, T* col) {
    const long long positions = g.out_positions(), rows = g.col_rows();
    for (long long b = 0; b < batch; ++b) {
        const T* image = x + b * g.channels * g.in_positions();
        T* out = y + b * g.out_channels * positions;
        for (long long col0 = 0; col0 < positions; col0 += chunk) {
            const long long cols = std::min(chunk, positions - col0);
            im2col_kernel<T><<<grid_for(rows * cols), 256, 0, ctx.stream()>>>(image, g, col0, cols, col);
            PKBW_CHECK(ctx, cudaGetLastError());
            Gemm product;
            product.dtype = dtype_of<T>();
            product.m = g.out_channels;
            product.n = cols;
            product.k = rows;
            product.a = w;
            product.b = col;
            product.c = out + col0;
            product.ldc = positions;
            product.exact_reductions = true; // cuDNN's convolutions reduce in fp32 (gemm.cuh)
            PKBW_TRY(gemm(ctx, product));
        }
    }
    return 0;
}

} // namespace detail

// y [batch, out_channels, out positions] = w [out_channels, channels · taps] · im2col(x) per image,
// rounded once to T. x [batch, channels, in...] and y packed; T = __nv_bfloat16, __half or float.
template <class T>
int conv_im2col(const Context& ctx, const ConvGeometry& g, long long batch, const T* x, const T* w, T* y,
                long long max_col_elements = 64ll << 20) {
    const long long positions = g.out_positions(), rows = g.col_rows();
    if (positions <= 0 || rows <= 0)
        return ctx.fail("conv_im2col: empty convolution (no output position or no input tap)");
    const long long chunk = std::max(1ll, std::min(positions, max_col_elements / rows));
    T* col =
        static_cast<T*>(ctx.scratch("tk_conv_im2col", static_cast<std::size_t>(rows * chunk) * sizeof(T)));
    return detail::conv_chunks<T>(ctx, g, batch, x, w, y, chunk, col);
}

// y[b, c, ...] = r(y[b, c, ...] + bias[c]) over y [batch, channels, positions].
template <class T>
int add_channel_bias(const Context& ctx, T* y, const T* bias, long long batch, long long channels,
                     long long positions) {
    const long long total = batch * channels * positions;
    if (total == 0)
        return 0;
    detail::add_channel_bias_kernel<T>
        <<<grid_for(total), 256, 0, ctx.stream()>>>(y, bias, channels, positions, total);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

} // namespace pkbw::tk
