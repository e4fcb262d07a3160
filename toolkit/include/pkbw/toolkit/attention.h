// Shapes and index arithmetic of the small attention blocks (PKB 39, 54-57), shared by the device
// kernels (attention.cuh) and the float64 twins (attention_host.h): one description, so both sides
// read the same elements.
//
// An attention problem is a batch of z0 x z1 independent score matrices [q_rows, k_rows]. Element
// (z0, z1, row, d) of an operand lives at `view.at(z0, z1, row) + d`: ring attention's [B, S, H, D]
// tensors are z0 = b, z1 = h, row = s (`bshd_view`); 39's head-axis attention over [B, S, h, D] is
// z0 = b, z1 = s, row = h (`head_axis_view`). The log-sum-exp of a query row is stored at
// `lse_index` = [z0, z1, row] (PKB's softmax_lse [B, H, S]).
#pragma once

#include "pkbw/toolkit/layout.h"

#include <cmath>

namespace pkbw::tk {

struct AttnView {
    long long offset = 0; // of element (0, 0, 0, 0)
    long long batch0 = 0, batch1 = 0, row = 0;

    PKBW_TK_HD long long at(long long z0, long long z1, long long r) const {
        return offset + z0 * batch0 + z1 * batch1 + r * row;
    }
};

struct AttnShape {
    long long z0 = 1, z1 = 1;
    long long q_rows = 0, k_rows = 0, dim = 0;
    float scale = 1.f;
    // torch.triu(ones(q_rows, k_rows), 1): key j is masked for query i when j > i.
    bool causal = false;

    PKBW_TK_HD long long problems() const { return z0 * z1; }
    PKBW_TK_HD long long lse_index(long long a, long long b, long long r) const {
        return (a * z1 + b) * q_rows + r;
    }
    PKBW_TK_HD bool masked(long long i, long long j) const { return causal && j > i; }
};

// PKB 55/56's attention layer (ring_attention_layer.cuh / _host.h): hidden [B, S, hidden] projected to
// `heads` heads of head_dim for each of q, k, v.
struct AttentionLayerDims {
    long long batch = 0, seq = 0, hidden = 0, heads = 0, head_dim = 0;
    bool causal = true;

    long long rows() const { return batch * seq; }
    long long width() const { return heads * head_dim; } // one of q, k, v per token
};

// The layer of a rank whose inputs are PKB 55/56's (hidden_states [B, S, hidden], w_qkv
// [3·heads·D, hidden], w_o), with `heads` local heads and the problem's `causal` param.
inline AttentionLayerDims attention_layer_dims(const Context& ctx, long long heads) {
    AttentionLayerDims dims;
    dims.batch = ctx.input(0).shape[0];
    dims.seq = ctx.input(0).shape[1];
    dims.hidden = ctx.input(0).shape[2];
    dims.heads = heads;
    dims.head_dim = ctx.input(1).shape[0] / 3 / heads;
    dims.causal = ctx.param("causal", 1) != 0;
    return dims;
}

// A contiguous [B, S, H, D] tensor (plus `offset` elements), seen as z0 = b, z1 = h, row = s.
inline AttnView bshd_view(long long s, long long h, long long d, long long offset = 0) {
    AttnView v;
    v.offset = offset;
    v.batch0 = s * h * d;
    v.batch1 = d;
    v.row = h * d;
    return v;
}

// Attention over the head axis of [B, S, heads, D] (PKB 39's matmul on the untransposed q): z0 = b,
// z1 = s, row = head. `head_stride` is the distance between heads (D, or 2D in 39's stacked k|v).
inline AttnView head_axis_view(long long s, long long heads, long long head_stride, long long offset = 0) {
    AttnView v;
    v.offset = offset;
    v.batch0 = s * heads * head_stride;
    v.batch1 = heads * head_stride;
    v.row = head_stride;
    return v;
}

// Ring attention's shape for [B, S, H, D] blocks: B x H problems of S x S scores.
inline AttnShape bshd_shape(long long b, long long s, long long h, long long d, float scale, bool causal) {
    AttnShape shape;
    shape.z0 = b;
    shape.z1 = h;
    shape.q_rows = s;
    shape.k_rows = s;
    shape.dim = d;
    shape.scale = scale;
    shape.causal = causal;
    return shape;
}

// bshd_shape of a [B, S, H, D] tensor with PKB's default softmax_scale D^-1/2 (54, 57).
inline AttnShape bshd_shape_of(const TensorView& q, bool causal) {
    return bshd_shape(q.shape[0], q.shape[1], q.shape[2], q.shape[3],
                      static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.shape[3]))), causal);
}

// 39's head-axis attention over `chunks` x `seq` tokens (z0 = chunk, z1 = token), each with `heads`
// local heads of head_dim (non-causal, scale head_dim^-1/2).
inline AttnShape head_axis_shape(long long chunks, long long seq, long long heads, long long head_dim) {
    AttnShape shape;
    shape.z0 = chunks;
    shape.z1 = seq;
    shape.q_rows = shape.k_rows = heads;
    shape.dim = head_dim;
    shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    return shape;
}

} // namespace pkbw::tk
