// Sample sort's device pieces for references (pkbw reference toolkit; PKB 85): a keys-only CUB radix
// sort for every floating dtype, a dispatch that includes f64, and the host conversions of one key to
// and from double (exact both ways), for the splitters that travel through the host.
//
//     PKBW_TRY(pkbw::tk::sort_keys(ctx, shard, sorted, n));   // ascending, T = bf16, f16, f32, f64
//
// Radix order puts -0 before +0 and sorts NaN by its bits; the host twin (std::sort of the values as
// double, the oracles') agrees on every input without NaN where equal values have equal bits. The
// rest of the algorithm is sample_sort.h (host plan), sort.cuh's searchsorted, alltoall.cuh.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cub/cub.cuh>

namespace pkbw::tk {

template <class T>
int sort_keys(const Context& ctx, const T* in, T* out, long long n) {
    if (n == 0) {
        return 0;
    }
    std::size_t bytes = 0;
    PKBW_CHECK(ctx, cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, out, static_cast<int>(n), 0,
                                                   static_cast<int>(sizeof(T) * 8), ctx.stream()));
    void* temp = ctx.scratch("pkbw_tk_sort_keys", bytes > 0 ? bytes : 1);
    PKBW_CHECK(ctx, cub::DeviceRadixSort::SortKeys(temp, bytes, in, out, static_cast<int>(n), 0,
                                                   static_cast<int>(sizeof(T) * 8), ctx.stream()));
    return 0;
}

// dispatch_float (types.cuh) with f64 as well: f(TypeTag<T>{}) for bf16, f16, f32 or f64.
template <class F>
int dispatch_sortable(const Context& ctx, DType dtype, const char* who, F&& f) {
    if (dtype == DType::F64) {
        return f(TypeTag<double>{});
    }
    return dispatch_float(ctx, dtype, who, static_cast<F&&>(f));
}

// One key as double and back, on the host (exact for these types).
inline double key_to_double(double v) {
    return v;
}
inline double key_to_double(float v) {
    return v;
}
inline double key_to_double(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
inline double key_to_double(__half v) {
    return __half2float(v);
}
template <class T>
T key_from_double(double v) {
    if constexpr (std::is_same_v<T, double>) {
        return v;
    } else if constexpr (std::is_same_v<T, float>) {
        return static_cast<float>(v);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        return __float2bfloat16(static_cast<float>(v));
    } else {
        return __float2half(static_cast<float>(v));
    }
}

} // namespace pkbw::tk
