// Reference for PKB problem 9: column sums (fp32 accumulation of the dtype-rounded products, as
// torch's sum over a bf16 tensor), results in the dtype, then two ncclAllReduce calls.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

// dy * x rounded to T, as torch's product tensor holds it.
template <class T>
struct RoundedProduct {
    const T* dy;
    const T* x;
    long long n;
    __device__ float operator()(long long row, long long col) const {
        const long long i = row * n + col;
        return pkbw::tk::round_as<T>(pkbw::tk::to_float(dy[i]) * pkbw::tk::to_float(x[i]));
    }
};

template <class T>
int run(const pkbw::Context& ctx, void* g, void* b) {
    const pkbw::TensorView& x = ctx.input(0);
    const T* dy = ctx.input(1).as<const T>();
    const long long m = x.shape[0], n = x.shape[1];
    PKBW_TRY(pkbw::tk::column_sums(ctx, RoundedProduct<T>{dy, x.as<const T>(), n}, m, n, static_cast<T*>(g)));
    PKBW_TRY(pkbw::tk::column_sums(ctx, pkbw::tk::Elements<T>{dy, n}, m, n, static_cast<T*>(b)));
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& d_gamma = ctx.output(0);
    const pkbw::TensorView& d_beta = ctx.output(1);
    void* g = ctx.scratch("lnb_gamma", d_gamma.nbytes());
    void* b = ctx.scratch("lnb_beta", d_beta.nbytes());
    PKBW_TRY(pkbw::tk::dispatch_float(ctx, d_gamma.dtype, "9_layernorm_backward reference", [&](auto tag) {
        return run<typename decltype(tag)::type>(ctx, g, b);
    }));
    const ncclDataType_t type = pkbw::nccl_dtype(d_gamma.dtype);
    const size_t n = static_cast<size_t>(d_gamma.numel());
    PKBW_CHECK(ctx, ncclAllReduce(b, d_beta.data, n, type, ncclSum, ctx.nccl(), ctx.stream()));
    PKBW_CHECK(ctx, ncclAllReduce(g, d_gamma.data, n, type, ncclSum, ctx.nccl(), ctx.stream()));
    return pkbw::tk::finish(ctx);
}
