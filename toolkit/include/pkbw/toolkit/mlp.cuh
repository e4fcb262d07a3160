// The tiny MLP's forward and backward for references (pkbw reference toolkit): the gradient of
// PKB's mse_loss(linear(relu(linear(x, W1, b1)), W2, b2), y) with respect to the flat parameters,
// with torch's roundings to the dtype (each GEMM's output, the bias sums, the MSE gradient):
//
//     h   = relu(r(x·W1ᵀ + b1))            out = r(h·W2ᵀ + b2)
//     d_o = r(r(2/numel) · r(out − y))     (mse_loss_backward on dtype elements)
//     gW2 = r(d_oᵀ·h)   gb2 = r(Σ_rows d_o)   d_h = r(d_o·W2) · [h > 0]
//     gW1 = r(d_hᵀ·x)   gb1 = r(Σ_rows d_h)
//
//     PKBW_TRY(pkbw::tk::mlp_mse_gradient(ctx, dtype, shape, flat_params, x, y, flat_grad));
//
// flat_params and flat_grad are MlpShape::numel() elements in the flat layout (mlp_shape.h). Scratch
// buffers are named "pkbw_tk_mlp_*". The host oracle's equivalent is mlp_host.h.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/mlp_shape.h"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {
namespace detail {

template <class T>
__global__ void relu_in_place(T* x, long long count) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        if (!(to_float(x[i]) > 0.f))
            x[i] = from_float<T>(0.f);
}

// d[i] = r(r(scale) · r(out[i] − y[i])), scale = 2 / numel rounded to T (torch's scalar_t alpha).
template <class T>
__global__ void mse_gradient(const T* out, const T* y, T* d, long long count, float scale) {
    const float alpha = round_as<T>(scale);
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        d[i] = from_float<T>(alpha * round_as<T>(to_float(out[i]) - to_float(y[i])));
}

// threshold_backward on relu's output: the gradient passes where h > 0.
template <class T>
__global__ void relu_backward_in_place(T* d, const T* h, long long count) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        if (!(to_float(h[i]) > 0.f))
            d[i] = from_float<T>(0.f);
}

} // namespace detail

// Flat-parameter pack and unpack on ctx.stream(): parts[k] (W1, b1, W2, b2, each packed) to and from
// the flat vector at the shape's offsets.
inline int mlp_pack(const Context& ctx, DType dtype, const MlpShape& s, const void* const parts[4],
                    void* flat) {
    const std::size_t elem = element_size(dtype);
    for (int k = 0; k < 4; ++k)
        PKBW_CHECK(ctx, cudaMemcpyAsync(static_cast<char*>(flat) + s.offset(k) * elem, parts[k],
                                        s.count(k) * elem, cudaMemcpyDeviceToDevice, ctx.stream()));
    return 0;
}
inline int mlp_unpack(const Context& ctx, DType dtype, const MlpShape& s, const void* flat,
                      void* const parts[4]) {
    const std::size_t elem = element_size(dtype);
    for (int k = 0; k < 4; ++k)
        PKBW_CHECK(ctx, cudaMemcpyAsync(parts[k], static_cast<const char*>(flat) + s.offset(k) * elem,
                                        s.count(k) * elem, cudaMemcpyDeviceToDevice, ctx.stream()));
    return 0;
}

inline int mlp_mse_gradient(const Context& ctx, DType dtype, const MlpShape& s, const void* flat_params,
                            const void* x, const void* y, void* flat_grad) {
    return dispatch_float(ctx, dtype, "pkbw::tk::mlp_mse_gradient", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = static_cast<const T*>(flat_params);
        T* g = static_cast<T*>(flat_grad);
        const long long hidden_count = s.rows * s.hidden, out_count = s.rows * s.d_out;
        T* h = static_cast<T*>(ctx.scratch("pkbw_tk_mlp_h", hidden_count * sizeof(T)));
        T* d_h = static_cast<T*>(ctx.scratch("pkbw_tk_mlp_dh", hidden_count * sizeof(T)));
        T* out = static_cast<T*>(ctx.scratch("pkbw_tk_mlp_out", out_count * sizeof(T)));
        T* d_o = static_cast<T*>(ctx.scratch("pkbw_tk_mlp_do", out_count * sizeof(T)));
        cudaStream_t stream = ctx.stream();

        PKBW_TRY(linear(ctx, dtype, s.rows, s.d_in, s.hidden, x, p + s.w1_offset(), p + s.b1_offset(), h));
        detail::relu_in_place<T><<<grid_for(hidden_count), 256, 0, stream>>>(h, hidden_count);
        PKBW_TRY(linear(ctx, dtype, s.rows, s.hidden, s.d_out, h, p + s.w2_offset(), p + s.b2_offset(), out));
        detail::mse_gradient<T><<<grid_for(out_count), 256, 0, stream>>>(
            out, static_cast<const T*>(y), d_o, out_count,
            static_cast<float>(2.0 / static_cast<double>(out_count)));

        Gemm gw2; // gW2[d_out, hidden] = d_oᵀ[d_out, rows] · h[rows, hidden]
        gw2.dtype = dtype;
        gw2.m = s.d_out;
        gw2.n = s.hidden;
        gw2.k = s.rows;
        gw2.a = d_o;
        gw2.trans_a = true;
        gw2.b = h;
        gw2.c = g + s.w2_offset();
        PKBW_TRY(gemm(ctx, gw2));
        PKBW_TRY(column_sums(ctx, Elements<T>{d_o, s.d_out}, s.rows, s.d_out, g + s.b2_offset()));

        PKBW_TRY(matmul(ctx, dtype, s.rows, s.hidden, s.d_out, d_o, p + s.w2_offset(), d_h));
        detail::relu_backward_in_place<T><<<grid_for(hidden_count), 256, 0, stream>>>(d_h, h, hidden_count);

        Gemm gw1 = gw2; // gW1[hidden, d_in] = d_hᵀ[hidden, rows] · x[rows, d_in]
        gw1.m = s.hidden;
        gw1.n = s.d_in;
        gw1.a = d_h;
        gw1.b = x;
        gw1.c = g + s.w1_offset();
        PKBW_TRY(gemm(ctx, gw1));
        PKBW_TRY(column_sums(ctx, Elements<T>{d_h, s.hidden}, s.rows, s.hidden, g + s.b1_offset()));
        return finish(ctx);
    });
}

} // namespace pkbw::tk
