// The top-k / top-p row filter of PKB 82-84 (`_apply_top_k_top_p`) on the device: one block per row of
// n <= 1024 elements (PKB's rows are 256), one element per thread. The rule and its tie order are in
// topk_rule.h; topk_host.h is the float64 oracle of the same rule.
//
// Per row: a bitonic sort in shared memory on (value, index), which is a strict total order, so the
// result is the stable ascending order (lower index first among equal values) whatever the network;
// top-k threshold = sorted[n - k]; softmax over the survivors (fp32 exp and block sum, divided, rounded to
// T as torch's softmax in T); an fp32 running sum in index order by one thread (each prefix rounded to T);
// the top-p mask; the scatter back to the input's order of the filtered values (input or -inf) and of the
// keep mask (1/0).
//
//     PKBW_TRY(pkbw::tk::top_k_top_p(ctx, logits.dtype, logits.data, rows, 256, {10, 0.9}, filtered, keep));
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/topk_rule.h"
#include "pkbw/toolkit/types.cuh"

#include <cmath>

namespace pkbw::tk {

namespace topk_detail {

// True when element (a, ia) sorts after (b, ib): padding slots (index >= n) after every real element.
__device__ __forceinline__ bool sorts_after(float a, int ia, float b, int ib, int n) {
    const bool pad_a = ia >= n, pad_b = ib >= n;
    if (pad_a != pad_b)
        return pad_a;
    if (a != b)
        return a > b;
    return ia > ib;
}

template <class T, int kThreads>
__global__ void top_k_top_p_kernel(const T* x, int n, int k, bool need_p, float bound, T* out,
                                   unsigned char* keep) {
    __shared__ float key[kThreads];
    __shared__ int index[kThreads];
    __shared__ float prefix[kThreads];
    const long long base = static_cast<long long>(blockIdx.x) * n;
    const int t = threadIdx.x;
    key[t] = t < n ? to_float(x[base + t]) : 0.f;
    index[t] = t;
    __syncthreads();
    for (int size = 2; size <= kThreads; size <<= 1) {
        for (int stride = size / 2; stride > 0; stride >>= 1) {
            const int partner = t ^ stride;
            if (partner > t) {
                const bool ascending = (t & size) == 0;
                if (sorts_after(key[t], index[t], key[partner], index[partner], n) == ascending) {
                    const float kv = key[t];
                    key[t] = key[partner];
                    key[partner] = kv;
                    const int iv = index[t];
                    index[t] = index[partner];
                    index[partner] = iv;
                }
            }
            __syncthreads();
        }
    }
    const bool real = t < n;
    const float value = key[t];
    bool kept = real;
    if (k > 0)
        kept = kept && value >= key[n - k];
    if (need_p) {
        const float top = key[n - 1];
        const float e = kept ? expf(value - top) : 0.f;
        const float sum = block_reduce<kThreads>(e, SumOp{});
        prefix[t] = round_as<T>(e / sum);
        __syncthreads();
        if (t == 0) {
            float running = 0.f;
            for (int s = 0; s < n; ++s) {
                running += prefix[s];
                prefix[s] = round_as<T>(running);
            }
        }
        __syncthreads();
        kept = kept && (t == n - 1 || prefix[t] > bound);
    }
    if (real) {
        out[base + index[t]] = from_float<T>(kept ? value : -INFINITY);
        if (keep)
            keep[base + index[t]] = kept ? 1 : 0;
    }
}

template <class T, int kThreads>
void launch(const Context& ctx, const T* x, long long rows, int n, int k, bool need_p, float bound, T* out,
            unsigned char* keep) {
    top_k_top_p_kernel<T, kThreads>
        <<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream()>>>(x, n, k, need_p, bound, out, keep);
}

} // namespace topk_detail

// out[rows, n] = the filtered rows of x (dtype's values or -inf); keep (nullable) = the uint8 keep mask.
// x and out may not alias. n must be 1..1024; rows up to 2^31 - 1.
inline int top_k_top_p(const Context& ctx, DType dtype, const void* x, long long rows, long long n,
                       const TopKTopP& filter, void* out, unsigned char* keep) {
    if (n < 1 || n > 1024)
        return ctx.fail("top_k_top_p: rows of 1..1024 elements only");
    if (rows == 0)
        return 0;
    const int k = filter.need_k() ? static_cast<int>(filter.top_k < n ? filter.top_k : n) : 0;
    const bool need_p = filter.need_p();
    const float bound = static_cast<float>(1.0 - filter.top_p);
    const int width = static_cast<int>(n);
    return dispatch_float(ctx, dtype, "top_k_top_p", [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* xs = static_cast<const T*>(x);
        T* os = static_cast<T*>(out);
        if (width <= 32)
            topk_detail::launch<T, 32>(ctx, xs, rows, width, k, need_p, bound, os, keep);
        else if (width <= 64)
            topk_detail::launch<T, 64>(ctx, xs, rows, width, k, need_p, bound, os, keep);
        else if (width <= 128)
            topk_detail::launch<T, 128>(ctx, xs, rows, width, k, need_p, bound, os, keep);
        else if (width <= 256)
            topk_detail::launch<T, 256>(ctx, xs, rows, width, k, need_p, bound, os, keep);
        else if (width <= 512)
            topk_detail::launch<T, 512>(ctx, xs, rows, width, k, need_p, bound, os, keep);
        else
            topk_detail::launch<T, 1024>(ctx, xs, rows, width, k, need_p, bound, os, keep);
        return finish(ctx);
    });
}

} // namespace pkbw::tk
