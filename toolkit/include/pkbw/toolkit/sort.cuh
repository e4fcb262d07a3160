// Sorting and counting on the device for references (pkbw reference toolkit): a thin CUB layer whose
// results equal sort_host.h's twins bit for bit (the rules are written there).
//
//     PKBW_TRY(pkbw::tk::stable_sort_pairs(ctx, keys, keys_out, values, values_out, n, end_bit));
//     PKBW_TRY(pkbw::tk::histogram(ctx, keys, n, bins, counts));          // counts: device, bins entries
//     PKBW_TRY(pkbw::tk::exclusive_scan(ctx, counts, offsets, bins));
//     PKBW_TRY(pkbw::tk::segmented_topk(ctx, values, segments, width, k, indices));
//
// Temporary storage comes from ctx.scratch under the names below (cached by the engine, so a call per
// invocation allocates once). Everything is queued on ctx.stream().
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cub/cub.cuh>

namespace pkbw::tk {

namespace detail {

template <class Key>
__global__ void histogram_kernel(const Key* keys, long long n, int bins, long long* counts, int* bad) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        const Key key = keys[i];
        if (key < 0 || key >= bins) {
            *bad = 1;
            continue;
        }
        atomicAdd(reinterpret_cast<unsigned long long*>(counts + key), 1ULL);
    }
}

// owner[i] = keys[i] % world (non-negative keys): 67's idx % W.
__global__ void owner_kernel(const long long* keys, long long n, int world, int* owner) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        owner[i] = static_cast<int>(keys[i] % world);
    }
}

__global__ void iota_kernel(long long* out, long long n, long long mod) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP) {
        out[i] = mod > 0 ? i % mod : i;
    }
}

template <class T>
__global__ void searchsorted_kernel(const T* sorted, long long n, const T* values, long long count,
                                    bool right, long long* out) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        long long lo = 0, hi = n;
        const T v = values[i];
        while (lo < hi) {
            const long long mid = (lo + hi) / 2;
            if (right ? !(v < sorted[mid]) : sorted[mid] < v) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        out[i] = lo;
    }
}

__global__ void scatter_add_rows_kernel(const float* src, long long width, const long long* rows,
                                        long long count, float* dst) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count * width; i += PKBW_GRID_STRIDE_STEP) {
        atomicAdd(dst + rows[i / width] * width + i % width, src[i]);
    }
}

// bounds[s] = s * width: the segment bounds of equal-width segments.
__global__ void segment_bounds_kernel(long long* bounds, long long count, long long width) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        bounds[i] = i * width;
    }
}

} // namespace detail

// Stable LSD radix sort of (key, value) pairs by key bits [0, end_bit): equal keys keep input order.
template <class Key, class Value>
int stable_sort_pairs(const Context& ctx, const Key* keys, Key* keys_out, const Value* values,
                      Value* values_out, long long n, int end_bit = static_cast<int>(sizeof(Key) * 8)) {
    std::size_t bytes = 0;
    PKBW_CHECK(ctx, cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, keys_out, values, values_out,
                                                    static_cast<int>(n), 0, end_bit, ctx.stream()));
    void* temp = ctx.scratch("pkbw_tk_sort_pairs", bytes > 0 ? bytes : 1);
    PKBW_CHECK(ctx, cub::DeviceRadixSort::SortPairs(temp, bytes, keys, keys_out, values, values_out,
                                                    static_cast<int>(n), 0, end_bit, ctx.stream()));
    return 0;
}

// owner[i] = keys[i] % world, then the stable permutation by owner and the per-owner counts (device,
// world entries): torch.argsort(idx % W, stable=True) and torch.bincount, as 67 and 68 need them.
inline int partition_by_owner(const Context& ctx, const long long* keys, long long n, int world,
                              long long* perm, long long* counts) {
    int* owner = static_cast<int*>(ctx.scratch("pkbw_tk_owner", sizeof(int) * (n > 0 ? n : 1) * 2));
    long long* order =
        static_cast<long long*>(ctx.scratch("pkbw_tk_owner_order", sizeof(long long) * (n > 0 ? n : 1)));
    PKBW_CHECK(ctx, cudaMemsetAsync(counts, 0, sizeof(long long) * world, ctx.stream()));
    if (n == 0) {
        return 0;
    }
    detail::owner_kernel<<<grid_for(n), 256, 0, ctx.stream()>>>(keys, n, world, owner);
    detail::iota_kernel<<<grid_for(n), 256, 0, ctx.stream()>>>(order, n, 0);
    PKBW_CHECK(ctx, cudaGetLastError());
    int end_bit = 1;
    while ((1 << end_bit) < world) {
        ++end_bit;
    }
    PKBW_TRY(stable_sort_pairs(ctx, owner, owner + n, order, perm, n, end_bit));
    int* bad = static_cast<int*>(ctx.scratch("pkbw_tk_histogram_flag", sizeof(int)));
    PKBW_CHECK(ctx, cudaMemsetAsync(bad, 0, sizeof(int), ctx.stream()));
    detail::histogram_kernel<<<grid_for(n), 256, 0, ctx.stream()>>>(owner, n, world, counts, bad);
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

// counts[b] = how many keys equal b, for keys in [0, bins); a key outside fails (one stream sync).
template <class Key>
int histogram(const Context& ctx, const Key* keys, long long n, int bins, long long* counts) {
    int* bad = static_cast<int*>(ctx.scratch("pkbw_tk_histogram_flag", sizeof(int)));
    PKBW_CHECK(ctx, cudaMemsetAsync(bad, 0, sizeof(int), ctx.stream()));
    PKBW_CHECK(ctx, cudaMemsetAsync(counts, 0, sizeof(long long) * bins, ctx.stream()));
    if (n > 0) {
        detail::histogram_kernel<<<grid_for(n), 256, 0, ctx.stream()>>>(keys, n, bins, counts, bad);
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    int flag = 0;
    PKBW_CHECK(ctx, cudaMemcpyAsync(&flag, bad, sizeof(int), cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    return flag ? ctx.fail("tk::histogram: a key is outside [0, bins)") : 0;
}

// offsets[i] = counts[0] + ... + counts[i-1].
inline int exclusive_scan(const Context& ctx, const long long* counts, long long* offsets, long long n) {
    std::size_t bytes = 0;
    PKBW_CHECK(ctx, cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts, offsets, static_cast<int>(n),
                                                  ctx.stream()));
    void* temp = ctx.scratch("pkbw_tk_scan", bytes > 0 ? bytes : 1);
    PKBW_CHECK(
        ctx, cub::DeviceScan::ExclusiveSum(temp, bytes, counts, offsets, static_cast<int>(n), ctx.stream()));
    return 0;
}

// out[i] = torch.searchsorted(sorted, values[i], right=right).
template <class T>
int searchsorted(const Context& ctx, const T* sorted, long long n, const T* values, long long count,
                 bool right, long long* out) {
    if (count > 0) {
        detail::searchsorted_kernel<<<grid_for(count), 256, 0, ctx.stream()>>>(sorted, n, values, count,
                                                                               right, out);
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    return 0;
}

// Per segment of `width` floats, the indices of the k largest, largest first, ties by the lower index:
// a stable segmented radix sort (descending) of (value, index) pairs, the first k of each segment kept.
// Radix order puts +0 before -0 and sorts NaN by its bits, where the host twin treats +0 == -0; inputs
// with signed zeros or NaN can differ there.
inline int segmented_topk(const Context& ctx, const float* values, long long segments, long long width,
                          long long k, long long* indices) {
    const long long n = segments * width;
    float* keys_out = static_cast<float*>(ctx.scratch("pkbw_tk_topk_keys", sizeof(float) * (n > 0 ? n : 1)));
    long long* order =
        static_cast<long long*>(ctx.scratch("pkbw_tk_topk_order", sizeof(long long) * (n > 0 ? n : 1) * 2));
    long long* bounds =
        static_cast<long long*>(ctx.scratch("pkbw_tk_segment_bounds", sizeof(long long) * (segments + 1)));
    detail::segment_bounds_kernel<<<grid_for(segments + 1), 256, 0, ctx.stream()>>>(bounds, segments + 1,
                                                                                    width);
    detail::iota_kernel<<<grid_for(n), 256, 0, ctx.stream()>>>(order, n, width);
    PKBW_CHECK(ctx, cudaGetLastError());
    std::size_t bytes = 0;
    const long long* begin = bounds;
    PKBW_CHECK(ctx, cub::DeviceSegmentedRadixSort::SortPairsDescending(
                        nullptr, bytes, values, keys_out, order, order + n, static_cast<int>(n),
                        static_cast<int>(segments), begin, begin + 1, 0, 32, ctx.stream()));
    void* temp = ctx.scratch("pkbw_tk_topk_temp", bytes > 0 ? bytes : 1);
    PKBW_CHECK(ctx, cub::DeviceSegmentedRadixSort::SortPairsDescending(
                        temp, bytes, values, keys_out, order, order + n, static_cast<int>(n),
                        static_cast<int>(segments), begin, begin + 1, 0, 32, ctx.stream()));
    PKBW_CHECK(ctx,
               cudaMemcpy2DAsync(indices, sizeof(long long) * k, order + n, sizeof(long long) * width,
                                 sizeof(long long) * k, segments, cudaMemcpyDeviceToDevice, ctx.stream()));
    return 0;
}

// dst row rows[t] += src row t (float rows of `width`). Atomic: the order of the additions is not fixed,
// so a row hit several times may differ from the host twin in the last bits.
inline int scatter_add_rows(const Context& ctx, const float* src, long long width, const long long* rows,
                            long long count, float* dst) {
    if (count > 0) {
        detail::scatter_add_rows_kernel<<<grid_for(count * width), 256, 0, ctx.stream()>>>(src, width, rows,
                                                                                           count, dst);
        PKBW_CHECK(ctx, cudaGetLastError());
    }
    return 0;
}

} // namespace pkbw::tk
