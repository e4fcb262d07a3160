// Reference for PKB problem 52: the toolkit's delayed-scaling e4m3 round trip of the local grads
// (absmax into the history, scale, round trip into a scratch tensor in D), ncclReduceScatter (SUM in
// D), then the division by W as torch's div_ by a Python int on CUDA (times the fp32 reciprocal),
// rounded to D.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/fp8_scaling.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

template <class T>
__global__ void scale_in_place(T* x, long long n, float factor) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        x[i] = pkbw::tk::from_float<T>(pkbw::tk::to_float(x[i]) * factor);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& grads = ctx.input(0);
    const pkbw::TensorView& history = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    void* recon = ctx.scratch("fp8rs52_recon", grads.nbytes());
    PKBW_TRY(pkbw::tk::fp8_delayed_round_trip(ctx, grads.dtype, grads.data, grads.numel(), history.data,
                                              ctx.output(1).data, static_cast<int>(history.numel()), recon));
    PKBW_CHECK(ctx, ncclReduceScatter(recon, out.data, static_cast<size_t>(out.numel()),
                                      pkbw::nccl_dtype(out.dtype), ncclSum, ctx.nccl(), ctx.stream()));
    return pkbw::tk::dispatch_float(ctx, out.dtype, "52 reference", [&](auto tag) {
        using T = typename decltype(tag)::type;
        scale_in_place<T><<<pkbw::tk::grid_for(out.numel()), 256, 0, ctx.stream()>>>(
            out.as<T>(), out.numel(), 1.0f / static_cast<float>(ctx.world_size));
        return pkbw::tk::finish(ctx);
    });
}
