// Index arithmetic of strided copies, shared by the device permute (permute.cuh) and the host
// oracles (permute_host.h): one description, so both sides move the same elements.
#pragma once

#include "pkbw/solution.h"

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define PKBW_TK_HD __host__ __device__ __forceinline__
#else
#define PKBW_TK_HD inline
#endif

namespace pkbw::tk {

// A copy into a contiguous destination of `shape`: destination element (i0, ..., in) reads the
// source element at sum(i_d * strides[d]) (elements of elem_bytes).
struct StridedCopy {
    int ndim = 0;
    std::size_t elem_bytes = 1;
    long long shape[kMaxDims] = {};
    long long strides[kMaxDims] = {};

    PKBW_TK_HD long long count() const {
        long long n = 1;
        for (int d = 0; d < ndim; ++d)
            n *= shape[d];
        return n;
    }
    // The source element of destination element `i` (row-major over shape).
    PKBW_TK_HD long long source_offset(long long i) const {
        long long offset = 0;
        for (int d = ndim - 1; d >= 0; --d) {
            const long long extent = shape[d];
            offset += (i % extent) * strides[d];
            i /= extent;
        }
        return offset;
    }

    // The copy src.permute(perm).contiguous() of a contiguous src of `src_shape`; false when perm is
    // not a permutation of 0..ndim-1 or ndim is out of 1..kMaxDims.
    static bool permutation(std::size_t elem_bytes, int ndim, const long long* src_shape, const int* perm,
                            StridedCopy& out) {
        if (ndim < 1 || ndim > kMaxDims)
            return false;
        long long src_strides[kMaxDims];
        long long stride = 1;
        for (int d = ndim - 1; d >= 0; --d) {
            src_strides[d] = stride;
            stride *= src_shape[d];
        }
        bool used[kMaxDims] = {};
        out = StridedCopy{};
        out.ndim = ndim;
        out.elem_bytes = elem_bytes;
        for (int d = 0; d < ndim; ++d) {
            if (perm[d] < 0 || perm[d] >= ndim || used[perm[d]])
                return false;
            used[perm[d]] = true;
            out.shape[d] = src_shape[perm[d]];
            out.strides[d] = src_strides[perm[d]];
        }
        return true;
    }

    // The same copy with size-1 dimensions dropped, dimensions that are contiguous in the source merged,
    // and the innermost run widened to 16-, 8-, 4- or 2-byte words where sizes and the two addresses
    // allow: fewer divisions per element and wider memory accesses, the same bytes moved.
    StridedCopy simplified(const void* src, const void* dst) const {
        StridedCopy s;
        s.elem_bytes = elem_bytes;
        for (int d = 0; d < ndim; ++d) {
            if (shape[d] == 1)
                continue;
            if (shape[d] == 0) { // an empty copy stays empty
                s.ndim = 1;
                s.shape[0] = 0;
                s.strides[0] = 1;
                return s;
            }
            if (s.ndim > 0 && s.strides[s.ndim - 1] == strides[d] * shape[d]) {
                s.shape[s.ndim - 1] *= shape[d];
                s.strides[s.ndim - 1] = strides[d];
            } else {
                s.shape[s.ndim] = shape[d];
                s.strides[s.ndim] = strides[d];
                ++s.ndim;
            }
        }
        if (s.ndim == 0) {
            s.ndim = 1;
            s.shape[0] = 1;
            s.strides[0] = 1;
        }
        const auto address = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
        while (s.elem_bytes < 16 && s.strides[s.ndim - 1] == 1 && s.shape[s.ndim - 1] % 2 == 0 &&
               (address(src) | address(dst)) % (2 * s.elem_bytes) == 0) {
            bool even = true;
            for (int d = 0; d < s.ndim - 1; ++d)
                even = even && s.strides[d] % 2 == 0;
            if (!even)
                break;
            for (int d = 0; d < s.ndim - 1; ++d)
                s.strides[d] /= 2;
            s.shape[s.ndim - 1] /= 2;
            s.elem_bytes *= 2;
        }
        return s;
    }
};

} // namespace pkbw::tk
