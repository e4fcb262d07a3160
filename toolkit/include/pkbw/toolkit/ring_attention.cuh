// Ring attention inside a context-parallel group for references (pkbw reference toolkit; PKB 54-57's
// _ring_attn_forward and _ring_attn_backward) on attention.cuh's blocks and ring.cuh's exchange.
// q, k, v (and dout, out) are contiguous [B, S, H, D] of T, `sh` is their bshd_shape; at step s a rank
// holds the K/V block of group rank (rank − s) mod n; with `causal`, blocks with s > rank are skipped
// and the diagonal one (s = 0) is masked.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/attention.cuh"
#include "pkbw/toolkit/ring.cuh"

#include <utility>

namespace pkbw::tk {

template <class T>
T* typed_scratch(const Context& ctx, const char* name, long long count) {
    return static_cast<T*>(ctx.scratch(name, static_cast<std::size_t>(count) * sizeof(T)));
}

// Forward: blocks merged in fp32 (PKB's sigmoid form), rounded once into out.
template <class T>
int ring_attention_forward(const Context& ctx, const SubComm& cp, const AttnShape& sh, const T* q, const T* k,
                           const T* v, T* out) {
    const long long count = sh.problems() * sh.q_rows * sh.dim;
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
    T* k_buf[2] = {typed_scratch<T>(ctx, "ring_attn_k0", count),
                   typed_scratch<T>(ctx, "ring_attn_k1", count)};
    T* v_buf[2] = {typed_scratch<T>(ctx, "ring_attn_v0", count),
                   typed_scratch<T>(ctx, "ring_attn_v1", count)};
    float* acc = typed_scratch<float>(ctx, "ring_attn_out", count);
    float* lse = typed_scratch<float>(ctx, "ring_attn_lse", sh.problems() * sh.q_rows);
    const AttnView view = bshd_view(sh.q_rows, sh.z1, sh.dim);
    AttnInputs<T> in{q, k, v, view, view, view};
    for (int step = 0; step < cp.size; ++step) {
        const bool more = step + 1 != cp.size;
        const RingBuffer kv[] = {{in.k, k_buf[step % 2], bytes}, {in.v, v_buf[step % 2], bytes}};
        if (more)
            PKBW_TRY(ring_shift(ctx, cp, kv, 2));
        if (!sh.causal || step <= cp.rank) {
            AttnShape block = sh;
            block.causal = sh.causal && step == 0;
            PKBW_TRY(attention_merge(ctx, block, in, acc, view, lse, step == 0));
        }
        in.k = k_buf[step % 2];
        in.v = v_buf[step % 2];
    }
    return store_rounded(ctx, acc, out, count);
}

// Backward with the given out and lse ([B, H, S] fp32): dQ accumulated locally, dK/dV accumulated while
// they travel a second ring (block + received, in fp32), each rounded once into dq, dk, dv.
template <class T>
int ring_attention_backward(const Context& ctx, const SubComm& cp, const AttnShape& sh, const T* dout,
                            const T* q, const T* k, const T* v, const T* out, const float* lse, T* dq, T* dk,
                            T* dv) {
    const long long count = sh.problems() * sh.q_rows * sh.dim;
    const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
    T* k_buf[2] = {typed_scratch<T>(ctx, "ring_attn_k0", count),
                   typed_scratch<T>(ctx, "ring_attn_k1", count)};
    T* v_buf[2] = {typed_scratch<T>(ctx, "ring_attn_v0", count),
                   typed_scratch<T>(ctx, "ring_attn_v1", count)};
    float* dk_cur = typed_scratch<float>(ctx, "ring_attn_dk0", count);
    float* dk_recv = typed_scratch<float>(ctx, "ring_attn_dk1", count);
    float* dv_cur = typed_scratch<float>(ctx, "ring_attn_dv0", count);
    float* dv_recv = typed_scratch<float>(ctx, "ring_attn_dv1", count);
    const AttnView view = bshd_view(sh.q_rows, sh.z1, sh.dim);
    AttnInputs<T> in{q, k, v, view, view, view};
    AttnGrads<T> g{dout,    out,     lse,    typed_scratch<float>(ctx, "ring_attn_dq", count),
                   nullptr, nullptr, dk_cur, dv_cur,
                   view,    1};
    for (int step = 0; step < cp.size; ++step) {
        const RingBuffer kv[] = {{in.k, k_buf[step % 2], bytes}, {in.v, v_buf[step % 2], bytes}};
        if (step + 1 != cp.size)
            PKBW_TRY(ring_shift(ctx, cp, kv, 2));
        if (!sh.causal || step <= cp.rank) {
            AttnShape block = sh;
            block.causal = sh.causal && step == 0;
            g.first = step == 0 ? 1 : 0;
            g.dk_in = step == 0 ? nullptr : dk_recv;
            g.dv_in = step == 0 ? nullptr : dv_recv;
            g.dk_out = dk_cur;
            g.dv_out = dv_cur;
            PKBW_TRY(attention_backward(ctx, block, in, g));
        } else {
            std::swap(dk_cur, dk_recv); // PKB: dk, dv = next_dk, next_dv
            std::swap(dv_cur, dv_recv);
        }
        in.k = k_buf[step % 2];
        in.v = v_buf[step % 2];
        const RingBuffer dkv[] = {{dk_cur, dk_recv, count * sizeof(float)},
                                  {dv_cur, dv_recv, count * sizeof(float)}};
        PKBW_TRY(ring_shift(ctx, cp, dkv, 2));
    }
    // After the last shift each rank holds the finished gradients of its own K/V block.
    const bool ring = cp.size > 1;
    PKBW_TRY(store_rounded(ctx, g.dq_acc, dq, count));
    PKBW_TRY(store_rounded(ctx, ring ? dk_recv : dk_cur, dk, count));
    return store_rounded(ctx, ring ? dv_recv : dv_cur, dv, count);
}

} // namespace pkbw::tk
