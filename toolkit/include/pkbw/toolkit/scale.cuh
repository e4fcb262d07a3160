// In-place division of a dtype array by a scalar, rounded to the dtype (torch's div_(world_size) of an
// all-reduced gradient; pkbw reference toolkit), as PyTorch's CUDA kernel does it: a tensor divided by
// a Python scalar is multiplied by the fp32 reciprocal of the scalar (div_true_kernel_cuda), which
// differs from a true division in the last fp32 bit for divisors that are not powers of two. The host
// equivalent is round_to(dtype, x / divisor) (PyTorch's CPU kernel divides).
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/types.cuh"

namespace pkbw::tk {
namespace detail {

template <class T>
__global__ void divide_kernel(T* x, long long count, float reciprocal) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        x[i] = from_float<T>(__fmul_rn(to_float(x[i]), reciprocal));
}

} // namespace detail

inline int divide_in_place(const Context& ctx, DType dtype, void* data, long long count, double divisor) {
    if (count == 0)
        return 0;
    return dispatch_float(ctx, dtype, "pkbw::tk::divide_in_place", [&](auto tag) {
        using T = typename decltype(tag)::type;
        detail::divide_kernel<T><<<grid_for(count), 256, 0, ctx.stream()>>>(
            static_cast<T*>(data), count, 1.f / static_cast<float>(divisor));
        PKBW_CHECK(ctx, cudaGetLastError());
        return 0;
    });
}

} // namespace pkbw::tk
