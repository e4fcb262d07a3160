// Reference for PKB problem 22: the EP grad is scaled by 1/ep_size in place (when ep_size > 1), the
// toolkit's fp32 sums of squares of both grads (device scalars), the non-EP sum all-reduced over WORLD,
// the EP sum over the EP-FSDP sub-communicator (ctx.sub_comm_strided(ep_size)) then the EP one
// (ctx.sub_comm_blocks(ep_size)), or over WORLD when ep_size is 1 or does not divide W (PKB's
// degenerate layout); then the toolkit's clip of both grads by the total norm.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/clip.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

namespace {

template <class T>
__global__ void scale_in_place(T* x, long long n, float factor) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < n; i += PKBW_GRID_STRIDE_STEP)
        x[i] = pkbw::tk::from_float<T>(pkbw::tk::to_float(x[i]) * factor);
}

__global__ void add_scalars(float* a, const float* b) {
    *a += *b;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.param("norm_type", 2.0) != 2.0) {
        return ctx.fail("22 reference: only norm_type 2 is implemented (PKB's only value)");
    }
    const pkbw::TensorView& non_ep = ctx.input(0);
    const pkbw::TensorView& ep = ctx.input(1);
    const int ep_size = static_cast<int>(ctx.param("ep_size", 1));
    if (ep_size > 1) {
        PKBW_TRY(pkbw::tk::dispatch_float(ctx, ep.dtype, "22 reference", [&](auto tag) {
            using T = typename decltype(tag)::type;
            scale_in_place<T><<<pkbw::tk::grid_for(ep.numel()), 256, 0, ctx.stream()>>>(
                ep.as<T>(), ep.numel(), 1.0f / static_cast<float>(ep_size));
            return pkbw::tk::finish(ctx);
        }));
    }
    float* sums = static_cast<float*>(ctx.scratch("clip22_sums", 2 * sizeof(float)));
    const pkbw::tk::TensorSpan non_ep_span{non_ep.data, non_ep.dtype, non_ep.numel()};
    const pkbw::tk::TensorSpan ep_span{ep.data, ep.dtype, ep.numel()};
    PKBW_TRY(pkbw::tk::sum_of_squares(ctx, &non_ep_span, 1, sums));
    PKBW_TRY(pkbw::tk::sum_of_squares(ctx, &ep_span, 1, sums + 1));
    PKBW_CHECK(ctx, ncclAllReduce(sums, sums, 1, ncclFloat32, ncclSum, ctx.nccl(), ctx.stream()));
    if (ep_size > 1 && ctx.world_size % ep_size == 0) {
        const pkbw::SubComm ep_fsdp = ctx.sub_comm_strided(ep_size);
        const pkbw::SubComm ep_group = ctx.sub_comm_blocks(ep_size);
        PKBW_CHECK(ctx,
                   ncclAllReduce(sums + 1, sums + 1, 1, ncclFloat32, ncclSum, ep_fsdp.nccl(), ctx.stream()));
        PKBW_CHECK(ctx,
                   ncclAllReduce(sums + 1, sums + 1, 1, ncclFloat32, ncclSum, ep_group.nccl(), ctx.stream()));
    } else {
        PKBW_CHECK(ctx, ncclAllReduce(sums + 1, sums + 1, 1, ncclFloat32, ncclSum, ctx.nccl(), ctx.stream()));
    }
    add_scalars<<<1, 1, 0, ctx.stream()>>>(sums, sums + 1);
    const pkbw::TensorView* grads[] = {&non_ep, &ep};
    return pkbw::tk::clip_by_total(ctx, grads, 2, sums, ctx.output(0).as<float>(),
                                   static_cast<float>(ctx.param("max_norm", 1.0)));
}
