// PKB 55/56's attention block on one rank for references (pkbw reference toolkit): qkv =
// F.linear(hidden, w_qkv) viewed [B, S, 3, heads, D], q/k/v made contiguous, ring attention within
// `cp` (ring_attention.cuh), then F.linear(context, w_o). Every tensor is T and rounded where PyTorch
// stores it; the caller all-reduces or sends the result.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/gemm.cuh"
#include "pkbw/toolkit/permute.cuh"
#include "pkbw/toolkit/ring_attention.cuh"

#include <cmath>

namespace pkbw::tk {

// T is dt's element type. hidden [B, S, hidden], w_qkv [3·heads·D, hidden], w_o [hidden, heads·D] -> out [B,
// S, hidden].
template <class T>
int ring_attention_layer(const Context& ctx, const SubComm& cp, DType dt, const AttentionLayerDims& dims,
                         const T* hidden, const T* w_qkv, const T* w_o, T* out) {
    const long long rows = dims.rows(), width = dims.width();
    T* qkv = typed_scratch<T>(ctx, "attn_layer_qkv", rows * 3 * width);
    T* split = typed_scratch<T>(ctx, "attn_layer_split", rows * 3 * width);
    T* context = typed_scratch<T>(ctx, "attn_layer_context", rows * width);
    PKBW_TRY(linear(ctx, dt, rows, dims.hidden, 3 * width, hidden, w_qkv, nullptr, qkv));
    const long long shape[] = {rows, 3, width};
    const int to_split[] = {1, 0, 2}; // [rows, 3, width] -> q, k, v each [rows, width]
    PKBW_TRY(permute(ctx, qkv, split, sizeof(T), 3, shape, to_split));
    const AttnShape sh =
        bshd_shape(dims.batch, dims.seq, dims.heads, dims.head_dim,
                   static_cast<float>(1.0 / std::sqrt(static_cast<double>(dims.head_dim))), dims.causal);
    const long long n = rows * width;
    PKBW_TRY(ring_attention_forward<T>(ctx, cp, sh, split, split + n, split + 2 * n, context));
    return linear(ctx, dt, rows, width, dims.hidden, context, w_o, nullptr, out);
}

} // namespace pkbw::tk
