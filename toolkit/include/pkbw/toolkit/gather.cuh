// Indexed row gather on the device for references (pkbw reference toolkit): PKB's `table[ids]`
// (embedding lookups, GNN feature fetches: 10, 65-68).
//
//     PKBW_TRY(pkbw::tk::gather_rows(ctx, features.data, row_bytes, ids, count, rows_in_table, gathered));
//
// Bytes move unchanged (any dtype). An id outside [0, rows_in_table) is an error recorded by the
// kernel and reported as a failure after the copy (PKB's indexing would raise).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cstdint>

namespace pkbw::tk {

namespace detail {

// dst row t = src row ids[t], copied in `Word` units (words per row = row_words).
template <class Word>
__global__ void gather_rows_kernel(const Word* src, long long row_words, const long long* ids,
                                   long long count, long long table_rows, Word* dst, int* bad_id) {
    const long long total = count * row_words;
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP) {
        const long long t = i / row_words, w = i % row_words;
        const long long id = ids[t];
        if (id < 0 || id >= table_rows) {
            *bad_id = 1;
            continue;
        }
        dst[i] = src[id * row_words + w];
    }
}

} // namespace detail

// dst[t] = src[ids[t]] for t < count, rows of row_bytes; ids is a device int64 array. Synchronises the
// stream once to report a bad id (uses ctx.scratch("pkbw_tk_gather_rows_flag")).
inline int gather_rows(const Context& ctx, const void* src, std::size_t row_bytes, const long long* ids,
                       long long count, long long table_rows, void* dst) {
    if (count == 0)
        return 0;
    int* bad = static_cast<int*>(ctx.scratch("pkbw_tk_gather_rows_flag", sizeof(int)));
    PKBW_CHECK(ctx, cudaMemsetAsync(bad, 0, sizeof(int), ctx.stream()));
    const bool wide = row_bytes % 16 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0 &&
                      reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
    if (wide) {
        const long long words = static_cast<long long>(row_bytes / 16);
        detail::gather_rows_kernel<<<grid_for(count * words), 256, 0, ctx.stream()>>>(
            static_cast<const uint4*>(src), words, ids, count, table_rows, static_cast<uint4*>(dst), bad);
    } else {
        const long long words = static_cast<long long>(row_bytes);
        detail::gather_rows_kernel<<<grid_for(count * words), 256, 0, ctx.stream()>>>(
            static_cast<const std::uint8_t*>(src), words, ids, count, table_rows,
            static_cast<std::uint8_t*>(dst), bad);
    }
    PKBW_CHECK(ctx, cudaGetLastError());
    int flag = 0;
    PKBW_CHECK(ctx, cudaMemcpyAsync(&flag, bad, sizeof(int), cudaMemcpyDeviceToHost, ctx.stream()));
    PKBW_CHECK(ctx, cudaStreamSynchronize(ctx.stream()));
    return flag ? ctx.fail("pkbw::tk::gather_rows: an id is outside the table") : 0;
}

} // namespace pkbw::tk
