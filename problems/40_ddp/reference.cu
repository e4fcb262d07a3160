// Reference for PKB problem 40 on the toolkit (MLP gradient, Adam): the parameters and moments are
// packed flat ([W1, b1, W2, b2], torch's _flatten_dense_tensors) and broadcast from rank 0 with
// ncclBroadcast; the flat gradient is ncclAllReduce'd (sum, in the dtype) and divided by W (rounded);
// Adam writes straight into the twelve outputs.
#include "pkbw/solution.h"
#include "pkbw/toolkit/adam.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/mlp.cuh"
#include "pkbw/toolkit/scale.cuh"

namespace tk = pkbw::tk;

namespace {

// Packs inputs first..first+3 into `flat` and broadcasts it from rank 0.
int pack_and_broadcast(const pkbw::Context& ctx, const tk::MlpShape& s, int first, void* flat) {
    const pkbw::DType d = ctx.input(0).dtype;
    const void* parts[4] = {ctx.input(first).data, ctx.input(first + 1).data, ctx.input(first + 2).data,
                            ctx.input(first + 3).data};
    PKBW_TRY(tk::mlp_pack(ctx, d, s, parts, flat));
    PKBW_CHECK(ctx, ncclBroadcast(flat, flat, static_cast<std::size_t>(s.numel()), pkbw::nccl_dtype(d), 0,
                                  ctx.nccl(), ctx.stream()));
    return 0;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.input(0).dtype;
    const tk::MlpShape s{ctx.input(0).shape[0], ctx.input(0).shape[1], ctx.input(2).shape[0],
                         ctx.input(4).shape[0]};
    const std::size_t elem = pkbw::element_size(d), bytes = static_cast<std::size_t>(s.numel()) * elem;
    char* w = static_cast<char*>(ctx.scratch("ddp_params", bytes));
    char* m = static_cast<char*>(ctx.scratch("ddp_exp_avg", bytes));
    char* v = static_cast<char*>(ctx.scratch("ddp_exp_avg_sq", bytes));
    char* g = static_cast<char*>(ctx.scratch("ddp_grad", bytes));
    PKBW_TRY(pack_and_broadcast(ctx, s, 2, w));
    PKBW_TRY(pack_and_broadcast(ctx, s, 6, m));
    PKBW_TRY(pack_and_broadcast(ctx, s, 10, v));
    PKBW_TRY(tk::mlp_mse_gradient(ctx, d, s, w, ctx.input(0).data, ctx.input(1).data, g));
    PKBW_CHECK(ctx, ncclAllReduce(g, g, static_cast<std::size_t>(s.numel()), pkbw::nccl_dtype(d), ncclSum,
                                  ctx.nccl(), ctx.stream()));
    PKBW_TRY(tk::divide_in_place(ctx, d, g, s.numel(), static_cast<double>(ctx.world_size)));
    const tk::AdamHyper hyper = tk::adam_hyper(ctx, tk::AdamRule::ScaledStep);
    for (int k = 0; k < 4; ++k) {
        const std::size_t at = static_cast<std::size_t>(s.offset(k)) * elem;
        PKBW_TRY(tk::adam_update(ctx, d, s.count(k), g + at, w + at, m + at, v + at, ctx.output(k).data,
                                 ctx.output(4 + k).data, ctx.output(8 + k).data, hyper));
    }
    return tk::finish(ctx);
}
