// A strided N-d permute on the device for references (pkbw reference toolkit): the layout changes of
// PKB's cat/chunk/transpose/view around collectives (concatenate gathered shards along a dimension,
// scatter heads, interleave ranks) as one kernel.
//
//     // gathered [W, M, K/W] -> A [M, W, K/W] (= torch.cat(shards, dim=1) of [M, K/W] shards)
//     const long long shape[] = {W, M, K / W};
//     const int perm[] = {1, 0, 2};
//     PKBW_TRY(pkbw::tk::permute(ctx, gathered, a, element_size(dtype), 3, shape, perm));
//
// Values are copied bit for bit (any dtype: only the element size matters).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/layout.h"
#include "pkbw/toolkit/types.cuh"

#include <cstdint>

namespace pkbw::tk {

namespace detail {

template <class Word>
__global__ void strided_copy_kernel(const Word* src, Word* dst, StridedCopy copy) {
    const long long total = copy.count();
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < total; i += PKBW_GRID_STRIDE_STEP)
        dst[i] = src[copy.source_offset(i)];
}

} // namespace detail

// dst (contiguous, copy.shape) = src read at copy.strides (elements of copy.elem_bytes). Simplify
// the copy first (StridedCopy::simplified) for wide words and few dimensions.
inline int strided_copy(const Context& ctx, const void* src, void* dst, const StridedCopy& plan) {
    const StridedCopy copy = plan.simplified(src, dst);
    const long long total = copy.count();
    if (total == 0)
        return 0;
    const unsigned grid = grid_for(total, 256, 16384);
    switch (copy.elem_bytes) {
    case 1:
        detail::strided_copy_kernel<<<grid, 256, 0, ctx.stream()>>>(static_cast<const std::uint8_t*>(src),
                                                                    static_cast<std::uint8_t*>(dst), copy);
        break;
    case 2:
        detail::strided_copy_kernel<<<grid, 256, 0, ctx.stream()>>>(static_cast<const std::uint16_t*>(src),
                                                                    static_cast<std::uint16_t*>(dst), copy);
        break;
    case 4:
        detail::strided_copy_kernel<<<grid, 256, 0, ctx.stream()>>>(static_cast<const std::uint32_t*>(src),
                                                                    static_cast<std::uint32_t*>(dst), copy);
        break;
    case 8:
        detail::strided_copy_kernel<<<grid, 256, 0, ctx.stream()>>>(static_cast<const std::uint64_t*>(src),
                                                                    static_cast<std::uint64_t*>(dst), copy);
        break;
    case 16:
        detail::strided_copy_kernel<<<grid, 256, 0, ctx.stream()>>>(static_cast<const uint4*>(src),
                                                                    static_cast<uint4*>(dst), copy);
        break;
    default:
        return ctx.fail("pkbw::tk::strided_copy: element size must be 1, 2, 4, 8 or 16 bytes");
    }
    PKBW_CHECK(ctx, cudaGetLastError());
    return 0;
}

// dst = src.permute(perm).contiguous() for a contiguous src of `shape` (ndim <= kMaxDims).
inline int permute(const Context& ctx, const void* src, void* dst, std::size_t elem_bytes, int ndim,
                   const long long* shape, const int* perm) {
    StridedCopy copy;
    if (!StridedCopy::permutation(elem_bytes, ndim, shape, perm, copy))
        return ctx.fail("pkbw::tk::permute: perm is not a permutation of 0..ndim-1 (ndim <= 8)");
    return strided_copy(ctx, src, dst, copy);
}

} // namespace pkbw::tk
