// The gated delta-rule recurrence on the device for references (pkbw reference toolkit; PKB 75's
// _gated_delta_recurrent, and 74's per-key-dim decay): per head a fp32 state S [dk, dv], zero at
// the start; at each step t
//     S ← diag(decay_t) · S;  u = (v_t − kᵀ_t S) · beta_t;  S ← S + k_t uᵀ;  o_t = qᵀ_t S.
// q, k (already normalised and scaled), decay [T, heads, dk] (a scalar decay repeated), beta
// [T, heads] and v [T, heads, dv] are fp32; o [T, heads, dv] is rounded to T. Value columns are
// independent, so one thread block owns 32 columns of one head (S in registers: a warp per 4 columns,
// a lane per dk/32 rows); dk must be a multiple of 32 and at most 256. normalize_rows prepares q and k,
// widen_to_f32 v.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {

struct DeltaRuleShape {
    long long steps = 0, heads = 0, key_dim = 0, value_dim = 0;
};

namespace delta_detail {

constexpr int kColumns = 32, kWarps = 8, kColumnsPerWarp = kColumns / kWarps, kMaxRowsPerLane = 8;

__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <class T>
__global__ void delta_rule_kernel(DeltaRuleShape sh, const float* q, const float* k, const float* v,
                                  const float* decay, const float* beta, T* out) {
    __shared__ float qs[256], ks[256], ds[256];
    const int head = blockIdx.x, col0 = blockIdx.y * kColumns;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int rows = static_cast<int>(sh.key_dim / 32);
    float state[kMaxRowsPerLane][kColumnsPerWarp] = {};
    for (long long t = 0; t < sh.steps; ++t) {
        const long long key_at = (t * sh.heads + head) * sh.key_dim;
        __syncthreads(); // the previous step's reads of qs/ks/ds are done
        for (long long i = threadIdx.x; i < sh.key_dim; i += blockDim.x) {
            qs[i] = q[key_at + i];
            ks[i] = k[key_at + i];
            ds[i] = decay[key_at + i];
        }
        __syncthreads();
        const float b = beta[t * sh.heads + head];
        for (int c = 0; c < kColumnsPerWarp; ++c) {
            const long long col = col0 + warp * kColumnsPerWarp + c;
            if (col >= sh.value_dim)
                break;
            float proj = 0.f;
            for (int r = 0; r < rows; ++r) {
                state[r][c] *= ds[lane + 32 * r];
                proj += ks[lane + 32 * r] * state[r][c];
            }
            proj = warp_sum(proj);
            const float u = (v[(t * sh.heads + head) * sh.value_dim + col] - proj) * b;
            float o = 0.f;
            for (int r = 0; r < rows; ++r) {
                state[r][c] += ks[lane + 32 * r] * u;
                o += qs[lane + 32 * r] * state[r][c];
            }
            o = warp_sum(o);
            if (lane == 0)
                out[(t * sh.heads + head) * sh.value_dim + col] = from_float<T>(o);
        }
    }
}

// One warp per row: out = x / max(‖x‖₂, eps) · scale in fp32 (F.normalize(x.float()) then · scale).
template <class T>
__global__ void normalize_rows_kernel(const T* x, long long rows, long long n, float scale, float eps,
                                      float* out) {
    const long long row = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows)
        return;
    float ss = 0.f;
    for (long long i = lane; i < n; i += 32) {
        const float v = to_float(x[row * n + i]);
        ss += v * v;
    }
    const float norm = fmaxf(sqrtf(warp_sum(ss)), eps);
    for (long long i = lane; i < n; i += 32)
        out[row * n + i] = to_float(x[row * n + i]) / norm * scale;
}

template <class T>
__global__ void widen_kernel(const T* x, long long count, float* out) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        out[i] = to_float(x[i]);
}

} // namespace delta_detail

// out = x.float()
template <class T>
int widen_to_f32(const Context& ctx, const T* x, long long count, float* out) {
    delta_detail::widen_kernel<T><<<grid_for(count), 256, 0, ctx.stream()>>>(x, count, out);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

template <class T>
int normalize_rows(const Context& ctx, const T* x, long long rows, long long n, float scale, float eps,
                   float* out) {
    const long long threads = rows * 32;
    delta_detail::normalize_rows_kernel<T>
        <<<static_cast<unsigned>((threads + 255) / 256), 256, 0, ctx.stream()>>>(x, rows, n, scale, eps, out);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

// The fp32 operands of one delta-rule call ([steps, heads, dk] for q, k and decay; [steps, heads, dv]
// for v; [steps, heads] for beta), in scratch buffers of the calling rank.
struct DeltaRuleBuffers {
    float *q, *k, *v, *decay, *beta;
};
inline DeltaRuleBuffers delta_rule_buffers(const Context& ctx, const DeltaRuleShape& sh) {
    const std::size_t rows = static_cast<std::size_t>(sh.steps * sh.heads), f = sizeof(float);
    return {static_cast<float*>(ctx.scratch("delta_rule_q", rows * sh.key_dim * f)),
            static_cast<float*>(ctx.scratch("delta_rule_k", rows * sh.key_dim * f)),
            static_cast<float*>(ctx.scratch("delta_rule_v", rows * sh.value_dim * f)),
            static_cast<float*>(ctx.scratch("delta_rule_decay", rows * sh.key_dim * f)),
            static_cast<float*>(ctx.scratch("delta_rule_beta", rows * f))};
}

// q·dk^-1/2 and k L2-normalised (F.normalize with `eps`), v widened to fp32; decay and beta are the
// caller's (they differ between 74 and 75).
template <class T>
int delta_rule_prepare(const Context& ctx, const DeltaRuleShape& sh, const T* q, const T* k, const T* v,
                       float eps, const DeltaRuleBuffers& b) {
    const long long rows = sh.steps * sh.heads;
    const float scale = static_cast<float>(1.0 / sqrt(static_cast<double>(sh.key_dim)));
    PKBW_TRY(normalize_rows<T>(ctx, q, rows, sh.key_dim, scale, eps, b.q));
    PKBW_TRY(normalize_rows<T>(ctx, k, rows, sh.key_dim, 1.f, eps, b.k));
    return widen_to_f32<T>(ctx, v, rows * sh.value_dim, b.v);
}

template <class T>
int delta_rule(const Context& ctx, const DeltaRuleShape& sh, const float* q, const float* k, const float* v,
               const float* decay, const float* beta, T* out) {
    if (sh.key_dim % 32 != 0 || sh.key_dim > 32 * delta_detail::kMaxRowsPerLane)
        return ctx.fail("pkbw::tk::delta_rule: the key dim must be a multiple of 32, at most 256");
    const dim3 grid(
        static_cast<unsigned>(sh.heads),
        static_cast<unsigned>((sh.value_dim + delta_detail::kColumns - 1) / delta_detail::kColumns));
    delta_detail::delta_rule_kernel<T>
        <<<grid, 32 * delta_detail::kWarps, 0, ctx.stream()>>>(sh, q, k, v, decay, beta, out);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

template <class T>
int delta_rule(const Context& ctx, const DeltaRuleShape& sh, const DeltaRuleBuffers& b, T* out) {
    return delta_rule<T>(ctx, sh, b.q, b.k, b.v, b.decay, b.beta, out);
}

} // namespace pkbw::tk
