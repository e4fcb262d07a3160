// Flash-style non-causal grouped-query attention (77: head_dim 128, 12-22 k keys per range), fp32 inside.
//
//   gqa_attention<T>(ctx, shape, q, k, v, out)   shape and strides as in gqa_attention.h; T = bf16, f16
//                                                or f32; head_dim must be 128
//
// One thread block per (32 queries, query head): each query row is held by 4 threads (dimension e on
// thread e % 4, so the 4 threads of a row read 4 banks and the 8 rows of a warp share them), and the
// keys stream through shared memory 32 at a time (K and V as fp32, 32 KiB). Per tile: the 32 scores of a
// row (a partial dot per thread, summed over the 4 threads with shuffles), the online softmax (running
// max and sum, the accumulator rescaled once per tile), then p · v. The output is divided by the sum and
// rounded to T once. No score or probability is rounded to T on the way (PKB's flash kernel rounds P to
// bf16 before P · V; the difference is far inside PKB's tolerance at these outputs).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/gqa_attention.h"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {

namespace detail {

constexpr int kGqaDim = 128;                 // head_dim
constexpr int kGqaRows = 32;                 // queries per block
constexpr int kGqaKeys = 32;                 // keys per shared-memory tile
constexpr int kGqaLanes = 4;                 // threads per query row
constexpr int kGqaOwn = kGqaDim / kGqaLanes; // dimensions per thread
constexpr int kGqaThreads = kGqaRows * kGqaLanes;

template <class T>
__global__ void __launch_bounds__(kGqaThreads)
    gqa_flash(GqaShape s, float scale, const T* q, const T* k, const T* v, T* out) {
    __shared__ float ks[kGqaKeys][kGqaDim];
    __shared__ float vs[kGqaKeys][kGqaDim];
    const int lane = threadIdx.x % kGqaLanes;
    const long long row = blockIdx.x * static_cast<long long>(kGqaRows) + threadIdx.x / kGqaLanes;
    const long long head = blockIdx.y, group = gqa_kv_head(s, head);
    const bool active = row < s.queries;

    float qr[kGqaOwn], acc[kGqaOwn];
    const T* qrow = q + (active ? row : 0) * s.q.row_stride + head * s.q.head_stride;
    for (int e = 0; e < kGqaOwn; ++e) {
        qr[e] = active ? to_float(qrow[e * kGqaLanes + lane]) * scale : 0.f;
        acc[e] = 0.f;
    }
    float running_max = -INFINITY, running_sum = 0.f;
    for (long long first = 0; first < s.keys; first += kGqaKeys) {
        for (int i = threadIdx.x; i < kGqaKeys * kGqaDim; i += kGqaThreads) {
            const int j = i / kGqaDim, e = i % kGqaDim;
            const long long key = first + j;
            const bool there = key < s.keys;
            ks[j][e] = there ? to_float(k[key * s.k.row_stride + group * s.k.head_stride + e]) : 0.f;
            vs[j][e] = there ? to_float(v[key * s.v.row_stride + group * s.v.head_stride + e]) : 0.f;
        }
        __syncthreads();
        const int valid = s.keys - first < kGqaKeys ? static_cast<int>(s.keys - first) : kGqaKeys;
        float scores[kGqaKeys];
        float tile_max = -INFINITY;
#pragma unroll
        for (int j = 0; j < kGqaKeys; ++j) {
            float part = 0.f;
            for (int e = 0; e < kGqaOwn; ++e)
                part = fmaf(qr[e], ks[j][e * kGqaLanes + lane], part);
            part += __shfl_xor_sync(0xffffffffu, part, 1);
            part += __shfl_xor_sync(0xffffffffu, part, 2);
            scores[j] = j < valid ? part : -INFINITY;
            tile_max = fmaxf(tile_max, scores[j]);
        }
        const float new_max = fmaxf(running_max, tile_max);
        const float correction = expf(running_max - new_max); // 0 on the first tile (exp(-inf))
        running_sum *= correction;
        for (int e = 0; e < kGqaOwn; ++e)
            acc[e] *= correction;
#pragma unroll
        for (int j = 0; j < kGqaKeys; ++j) {
            const float p = expf(scores[j] - new_max); // 0 for keys past the end (score -inf)
            running_sum += p;
            for (int e = 0; e < kGqaOwn; ++e)
                acc[e] = fmaf(p, vs[j][e * kGqaLanes + lane], acc[e]);
        }
        running_max = new_max;
        __syncthreads();
    }
    if (!active)
        return;
    T* orow = out + row * s.out.row_stride + head * s.out.head_stride;
    for (int e = 0; e < kGqaOwn; ++e)
        orow[e * kGqaLanes + lane] = from_float<T>(acc[e] / running_sum);
}

} // namespace detail

template <class T>
int gqa_attention(const Context& ctx, const GqaShape& s, const T* q, const T* k, const T* v, T* out) {
    if (s.head_dim != detail::kGqaDim) {
        return ctx.fail("gqa_attention: head_dim must be 128");
    }
    if (!gqa_heads_group(s)) {
        return ctx.fail("gqa_attention: the query heads must be a multiple of the key/value heads");
    }
    if (s.queries == 0 || s.q_heads == 0) {
        return 0;
    }
    if (s.keys == 0) {
        return ctx.fail("gqa_attention: no keys (the softmax of an empty row is undefined)");
    }
    const dim3 grid(static_cast<unsigned>((s.queries + detail::kGqaRows - 1) / detail::kGqaRows),
                    static_cast<unsigned>(s.q_heads));
    detail::gqa_flash<T>
        <<<grid, detail::kGqaThreads, 0, ctx.stream()>>>(s, static_cast<float>(s.scale), q, k, v, out);
    return finish(ctx);
}

} // namespace pkbw::tk
