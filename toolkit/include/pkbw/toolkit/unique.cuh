// First-occurrence dedup on the device for references (pkbw reference toolkit): the device twin of
// sort_host.h's unique_first (64's np.unique(return_index=True) followed by a sort of the indices), on CUB.
//
//     long long distinct = 0;
//     PKBW_TRY(pkbw::tk::unique_first(ctx, keys, n, out, distinct));   // out: the distinct keys, first seen
//     first
//
// How: a stable radix sort of (key, index) pairs puts each key's occurrences together in index order, so
// the first of every run is the key's first index; those indices are selected (cub::DeviceSelect), sorted
// ascending and gathered. One stream synchronisation (the number of distinct keys). Scratch comes from
// ctx.scratch under the names below; everything is queued on ctx.stream().
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/sort.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cub/cub.cuh>

namespace pkbw::tk {

namespace detail {

// flags[j] = 1 where sorted[j] starts a run of equal keys.
__global__ void run_starts_kernel(const long long* sorted, long long n, unsigned char* flags) {
    for (long long j = PKBW_GRID_STRIDE_BEGIN; j < n; j += PKBW_GRID_STRIDE_STEP) {
        flags[j] = j == 0 || sorted[j] != sorted[j - 1] ? 1 : 0;
    }
}

__global__ void gather_keys_kernel(const long long* keys, const long long* at, long long count,
                                   long long* out) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP) {
        out[i] = keys[at[i]];
    }
}

} // namespace detail

// out[0..distinct) = the distinct values of keys[0..n) in the order of their first occurrence. out must not
// overlap keys and holds up to n values.
inline int unique_first(const Context& ctx, const long long* keys, long long n, long long* out,
                        long long& distinct) {
    distinct = 0;
    if (n == 0) {
        return 0;
    }
    const std::size_t slots = static_cast<std::size_t>(n);
    auto* work = static_cast<long long*>(ctx.scratch("pkbw_tk_unique_work", sizeof(long long) * slots * 4));
    long long *order = work, *sorted_keys = work + slots, *first_index = work + 2 * slots,
              *selected = work + 3 * slots;
    auto* flags = static_cast<unsigned char*>(ctx.scratch("pkbw_tk_unique_flags", slots));
    auto* count = static_cast<int*>(ctx.scratch("pkbw_tk_unique_count", sizeof(int)));
    detail::iota_kernel<<<grid_for(n), 256, 0, ctx.stream()>>>(order, n, 0);
    PKBW_CHECK(ctx, cudaGetLastError());
    PKBW_TRY(stable_sort_pairs(ctx, keys, sorted_keys, order, first_index, n));
    detail::run_starts_kernel<<<grid_for(n), 256, 0, ctx.stream()>>>(sorted_keys, n, flags);
    PKBW_CHECK(ctx, cudaGetLastError());
    std::size_t bytes = 0;
    PKBW_CHECK(ctx, cub::DeviceSelect::Flagged(nullptr, bytes, first_index, flags, selected, count,
                                               static_cast<int>(n), ctx.stream()));
    void* temp = ctx.scratch("pkbw_tk_unique_select", bytes > 0 ? bytes : 1);
    PKBW_CHECK(ctx, cub::DeviceSelect::Flagged(temp, bytes, first_index, flags, selected, count,
                                               static_cast<int>(n), ctx.stream()));
    int found = 0;
    PKBW_CHECK(ctx, cudaMemcpyAsync(&found, count, sizeof(int), cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    // The first indices in ascending order (indices are below n: the low bits are enough for the sort).
    int end_bit = 1;
    while (end_bit < 63 && (1LL << end_bit) < n) {
        ++end_bit;
    }
    bytes = 0;
    PKBW_CHECK(ctx, cub::DeviceRadixSort::SortKeys(nullptr, bytes, selected, order, found, 0, end_bit,
                                                   ctx.stream()));
    temp = ctx.scratch("pkbw_tk_unique_sort", bytes > 0 ? bytes : 1);
    PKBW_CHECK(ctx,
               cub::DeviceRadixSort::SortKeys(temp, bytes, selected, order, found, 0, end_bit, ctx.stream()));
    detail::gather_keys_kernel<<<grid_for(found), 256, 0, ctx.stream()>>>(keys, order, found, out);
    PKBW_CHECK(ctx, cudaGetLastError());
    distinct = found;
    return 0;
}

} // namespace pkbw::tk
