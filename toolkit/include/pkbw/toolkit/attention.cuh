// Small attention blocks on the device for references (pkbw reference toolkit; PKB 39, 54-57): one
// thread block per query row (forward, dQ) or key row (dK/dV), the scores of the row in shared
// memory, fp32 arithmetic in a fixed order. Views and shapes are attention.h's.
//
//   attention_merge:    PKB's _local_attn + _merge_out_lse: the block's softmax(q kᵀ·scale)·v and its
//                       log-sum-exp, merged into fp32 accumulators (out, lse) in PKB's sigmoid /
//                       logsigmoid form (the first block initialises them).
//   attention_rounded:  39's _local_attention in the dtype: q kᵀ rounded, ·scale rounded, softmax
//                       rounded, p·v rounded (what eager PyTorch stores after each op).
//   attention_backward: 57's _local_attn_backward with p = exp(s − lse) from the given lse:
//                       dq_acc (+)= scale·dS·k; dk_out = scale·dSᵀ·q (+ dk_in); dv_out = pᵀ·dout (+ dv_in).
//   store_rounded:      an fp32 accumulator rounded into the dtype (`.to(q.dtype)`).
//
// The kernels hold one row of scores in shared memory: q_rows and k_rows up to 4096 (under 48 KiB of shared
// memory).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/attention.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cmath>

namespace pkbw::tk {

constexpr int kAttnThreads = 128;
constexpr long long kAttnMaxRows = 4096;

// q, k, v of one block with their views.
template <class T>
struct AttnInputs {
    const T* q = nullptr;
    const T* k = nullptr;
    const T* v = nullptr;
    AttnView qv, kv, vv;
};

namespace attn_detail {

// Which problem and row block `blockIdx.x` is: rows outermost per problem.
struct RowId {
    long long z0, z1, row;
};
__device__ inline RowId row_id(long long rows_per_problem, long long z1) {
    const long long id = blockIdx.x;
    const long long zz = id / rows_per_problem;
    return {zz / z1, zz % z1, id % rows_per_problem};
}

template <class T>
__device__ float dot(const float* a, const T* b, long long n) {
    float acc = 0.f;
    for (long long d = 0; d < n; ++d)
        acc += a[d] * to_float(b[d]);
    return acc;
}

template <class T>
__device__ void load_row(float* dst, const T* src, long long n) {
    for (long long d = threadIdx.x; d < n; d += blockDim.x)
        dst[d] = to_float(src[d]);
}

// Scores of query row i into p[0..k_rows), softmax in place; returns the row's log-sum-exp.
// kRounded: every stored tensor rounded to T (39).
template <class T, bool kRounded>
__device__ float softmax_row(const AttnShape& sh, const AttnInputs<T>& in, const float* qrow, long long z0,
                             long long z1, long long i, float* p) {
    float local_max = -INFINITY;
    for (long long j = threadIdx.x; j < sh.k_rows; j += blockDim.x) {
        const float raw = dot(qrow, in.k + in.kv.at(z0, z1, j), sh.dim);
        const float s = kRounded ? round_as<T>(round_as<T>(raw) * sh.scale) : raw * sh.scale;
        p[j] = sh.masked(i, j) ? -INFINITY : s;
        local_max = MaxOp{}(local_max, p[j]);
    }
    const float m = block_reduce<kAttnThreads>(local_max, MaxOp{});
    float local_sum = 0.f;
    for (long long j = threadIdx.x; j < sh.k_rows; j += blockDim.x)
        local_sum += expf(p[j] - m);
    const float sum = block_reduce<kAttnThreads>(local_sum, SumOp{});
    for (long long j = threadIdx.x; j < sh.k_rows; j += blockDim.x) {
        const float prob = expf(p[j] - m) / sum;
        p[j] = kRounded ? round_as<T>(prob) : prob;
    }
    __syncthreads();
    return m + logf(sum);
}

template <class T>
__device__ float weighted_v(const AttnShape& sh, const AttnInputs<T>& in, const float* p, long long z0,
                            long long z1, long long d) {
    float o = 0.f;
    for (long long j = 0; j < sh.k_rows; ++j)
        o += p[j] * to_float(in.v[in.vv.at(z0, z1, j) + d]);
    return o;
}

// This block's query row: its id, with q's row loaded into qrow (shared memory).
template <class T>
__device__ RowId begin_query_row(const AttnShape& sh, const AttnInputs<T>& in, float* qrow) {
    const RowId r = row_id(sh.q_rows, sh.z1);
    load_row(qrow, in.q + in.qv.at(r.z0, r.z1, r.row), sh.dim);
    __syncthreads();
    return r;
}

template <class T>
__global__ void merge_kernel(AttnShape sh, AttnInputs<T> in, float* out, AttnView ov, float* lse, int first) {
    extern __shared__ float smem[];
    float* qrow = smem;
    float* p = smem + sh.dim;
    const RowId r = begin_query_row(sh, in, qrow);
    const float block_lse = softmax_row<T, false>(sh, in, qrow, r.z0, r.z1, r.row, p);
    const long long li = sh.lse_index(r.z0, r.z1, r.row);
    const float old_lse = first ? 0.f : lse[li];
    // out − sigmoid(block_lse − lse)·(out − block_out), as PKB's _update_out_and_lse.
    const float weight = 1.f / (1.f + expf(-(block_lse - old_lse)));
    float* orow = out + ov.at(r.z0, r.z1, r.row);
    for (long long d = threadIdx.x; d < sh.dim; d += blockDim.x) {
        const float o = weighted_v(sh, in, p, r.z0, r.z1, d);
        orow[d] = first ? o : orow[d] - weight * (orow[d] - o);
    }
    if (threadIdx.x == 0) {
        // lse − logsigmoid(lse − block_lse); logsigmoid(x) = min(x, 0) − log1p(exp(−|x|)).
        const float x = old_lse - block_lse;
        lse[li] = first ? block_lse : old_lse - (fminf(x, 0.f) - log1pf(expf(-fabsf(x))));
    }
}

template <class T>
__global__ void rounded_kernel(AttnShape sh, AttnInputs<T> in, T* out, AttnView ov) {
    extern __shared__ float smem[];
    float* qrow = smem;
    float* p = smem + sh.dim;
    const RowId r = begin_query_row(sh, in, qrow);
    softmax_row<T, true>(sh, in, qrow, r.z0, r.z1, r.row, p);
    T* orow = out + ov.at(r.z0, r.z1, r.row);
    for (long long d = threadIdx.x; d < sh.dim; d += blockDim.x)
        orow[d] = from_float<T>(weighted_v(sh, in, p, r.z0, r.z1, d));
}

// Gradients of one block: dout and out share q's view, dq_acc / dk_out / dv_out (fp32) `gv`.
template <class T>
struct GradArgs {
    const T* dout;
    const T* out;
    const float* lse;
    float* dq_acc;
    const float* dk_in; // null: nothing to add
    const float* dv_in;
    float* dk_out;
    float* dv_out;
    AttnView gv;
    int first;
};

// Σ_d dout·out of query row i (PKB's row_dot).
template <class T>
__device__ float row_dot(const AttnShape& sh, const AttnInputs<T>& in, const GradArgs<T>& g, long long z0,
                         long long z1, long long i) {
    const long long at = in.qv.at(z0, z1, i);
    float acc = 0.f;
    for (long long d = 0; d < sh.dim; ++d)
        acc += to_float(g.dout[at + d]) * to_float(g.out[at + d]);
    return acc;
}

template <class T>
__global__ void grad_q_kernel(AttnShape sh, AttnInputs<T> in, GradArgs<T> g) {
    extern __shared__ float smem[];
    float* qrow = smem;
    float* drow = smem + sh.dim;
    float* ds = smem + 2 * sh.dim;
    const RowId r = row_id(sh.q_rows, sh.z1);
    const long long at = in.qv.at(r.z0, r.z1, r.row);
    load_row(qrow, in.q + at, sh.dim);
    load_row(drow, g.dout + at, sh.dim);
    __syncthreads();
    const float rd = row_dot(sh, in, g, r.z0, r.z1, r.row);
    const float lse = g.lse[sh.lse_index(r.z0, r.z1, r.row)];
    for (long long j = threadIdx.x; j < sh.k_rows; j += blockDim.x) {
        const float s = dot(qrow, in.k + in.kv.at(r.z0, r.z1, j), sh.dim) * sh.scale;
        const float p = sh.masked(r.row, j) ? 0.f : expf(s - lse);
        ds[j] = p * (dot(drow, in.v + in.vv.at(r.z0, r.z1, j), sh.dim) - rd);
    }
    __syncthreads();
    float* dq = g.dq_acc + g.gv.at(r.z0, r.z1, r.row);
    for (long long d = threadIdx.x; d < sh.dim; d += blockDim.x) {
        float acc = 0.f;
        for (long long j = 0; j < sh.k_rows; ++j)
            acc += ds[j] * to_float(in.k[in.kv.at(r.z0, r.z1, j) + d]);
        dq[d] = g.first ? acc * sh.scale : dq[d] + acc * sh.scale;
    }
}

template <class T>
__global__ void grad_kv_kernel(AttnShape sh, AttnInputs<T> in, GradArgs<T> g) {
    extern __shared__ float smem[];
    float* krow = smem;
    float* vrow = smem + sh.dim;
    float* p = smem + 2 * sh.dim;
    float* ds = p + sh.q_rows;
    const RowId r = row_id(sh.k_rows, sh.z1); // row = key j
    load_row(krow, in.k + in.kv.at(r.z0, r.z1, r.row), sh.dim);
    load_row(vrow, in.v + in.vv.at(r.z0, r.z1, r.row), sh.dim);
    __syncthreads();
    for (long long i = threadIdx.x; i < sh.q_rows; i += blockDim.x) {
        const long long at = in.qv.at(r.z0, r.z1, i);
        float s = 0.f, dp = 0.f;
        for (long long d = 0; d < sh.dim; ++d) {
            s += to_float(in.q[at + d]) * krow[d];
            dp += to_float(g.dout[at + d]) * vrow[d];
        }
        const float lse = g.lse[sh.lse_index(r.z0, r.z1, i)];
        p[i] = sh.masked(i, r.row) ? 0.f : expf(s * sh.scale - lse);
        ds[i] = p[i] * (dp - row_dot(sh, in, g, r.z0, r.z1, i));
    }
    __syncthreads();
    const long long out_at = g.gv.at(r.z0, r.z1, r.row);
    for (long long d = threadIdx.x; d < sh.dim; d += blockDim.x) {
        float dk = 0.f, dv = 0.f;
        for (long long i = 0; i < sh.q_rows; ++i) {
            const long long at = in.qv.at(r.z0, r.z1, i) + d;
            dk += ds[i] * to_float(in.q[at]);
            dv += p[i] * to_float(g.dout[at]);
        }
        g.dk_out[out_at + d] = dk * sh.scale + (g.dk_in ? g.dk_in[out_at + d] : 0.f);
        g.dv_out[out_at + d] = dv + (g.dv_in ? g.dv_in[out_at + d] : 0.f);
    }
}

template <class T>
__global__ void store_rounded_kernel(const float* src, T* dst, long long count) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        dst[i] = from_float<T>(src[i]);
}

inline int check_rows(const Context& ctx, const AttnShape& sh) {
    if (sh.q_rows > kAttnMaxRows || sh.k_rows > kAttnMaxRows || sh.dim > 1024)
        return ctx.fail("pkbw::tk attention: at most 4096 query/key rows and head dim 1024 per block");
    return 0;
}

} // namespace attn_detail

template <class T>
int attention_merge(const Context& ctx, const AttnShape& sh, const AttnInputs<T>& in, float* out,
                    const AttnView& ov, float* lse, bool first) {
    PKBW_TRY(attn_detail::check_rows(ctx, sh));
    const std::size_t smem = static_cast<std::size_t>(sh.dim + sh.k_rows) * sizeof(float);
    attn_detail::merge_kernel<T>
        <<<static_cast<unsigned>(sh.problems() * sh.q_rows), kAttnThreads, smem, ctx.stream()>>>(
            sh, in, out, ov, lse, first ? 1 : 0);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

template <class T>
int attention_rounded(const Context& ctx, const AttnShape& sh, const AttnInputs<T>& in, T* out,
                      const AttnView& ov) {
    PKBW_TRY(attn_detail::check_rows(ctx, sh));
    const std::size_t smem = static_cast<std::size_t>(sh.dim + sh.k_rows) * sizeof(float);
    attn_detail::rounded_kernel<T>
        <<<static_cast<unsigned>(sh.problems() * sh.q_rows), kAttnThreads, smem, ctx.stream()>>>(sh, in, out,
                                                                                                 ov);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

template <class T>
int attention_backward(const Context& ctx, const AttnShape& sh, const AttnInputs<T>& in,
                       const attn_detail::GradArgs<T>& g) {
    PKBW_TRY(attn_detail::check_rows(ctx, sh));
    const std::size_t q_smem = static_cast<std::size_t>(2 * sh.dim + sh.k_rows) * sizeof(float);
    const std::size_t kv_smem = static_cast<std::size_t>(2 * sh.dim + 2 * sh.q_rows) * sizeof(float);
    attn_detail::grad_q_kernel<T>
        <<<static_cast<unsigned>(sh.problems() * sh.q_rows), kAttnThreads, q_smem, ctx.stream()>>>(sh, in, g);
    attn_detail::grad_kv_kernel<T>
        <<<static_cast<unsigned>(sh.problems() * sh.k_rows), kAttnThreads, kv_smem, ctx.stream()>>>(sh, in,
                                                                                                    g);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

template <class T>
int store_rounded(const Context& ctx, const float* src, T* dst, long long count) {
    attn_detail::store_rounded_kernel<T><<<grid_for(count), 256, 0, ctx.stream()>>>(src, dst, count);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

template <class T>
using AttnGrads = attn_detail::GradArgs<T>;

} // namespace pkbw::tk
