// The host oracles' strided copy and permute (pkbw reference toolkit): the same StridedCopy as the
// device permute (permute.cuh), on host memory.
#pragma once

#include "pkbw/toolkit/layout.h"

#include <cstring>
#include <vector>

namespace pkbw::tk {

// dst (contiguous, copy.shape) = src read at copy.strides; elements of copy.elem_bytes bytes.
inline void strided_copy_host(const void* src, void* dst, const StridedCopy& copy) {
    const auto* from = static_cast<const unsigned char*>(src);
    auto* to = static_cast<unsigned char*>(dst);
    const long long total = copy.count();
    for (long long i = 0; i < total; ++i)
        std::memcpy(to + i * copy.elem_bytes, from + copy.source_offset(i) * copy.elem_bytes,
                    copy.elem_bytes);
}

// dst = src.permute(perm).contiguous(); false when perm is not a permutation of 0..ndim-1.
inline bool permute_host(const void* src, void* dst, std::size_t elem_bytes, int ndim, const long long* shape,
                         const int* perm) {
    StridedCopy copy;
    if (!StridedCopy::permutation(elem_bytes, ndim, shape, perm, copy))
        return false;
    strided_copy_host(src, dst, copy);
    return true;
}

// The same for a vector of values (double, float, ...), returning the permuted vector.
template <class T>
std::vector<T> permuted(const std::vector<T>& src, int ndim, const long long* shape, const int* perm) {
    std::vector<T> dst(src.size());
    permute_host(src.data(), dst.data(), sizeof(T), ndim, shape, perm);
    return dst;
}

} // namespace pkbw::tk
