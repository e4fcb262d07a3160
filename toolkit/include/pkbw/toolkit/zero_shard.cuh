// PKB 41 (ZeRO-1) and 42 (ZeRO-2)'s training step for references (pkbw reference toolkit), on the
// MLP, Adam and scaling pieces: rank 0's flat parameters by ncclBroadcast, the MLP's flat gradient
// (mlp.cuh), the gradient summed over ranks (ncclAllReduce for ZeRO-1, ncclReduceScatter into this
// rank's slice for ZeRO-2; sum in the dtype) and divided by W, Adam on this rank's 1/W slice into the
// moment outputs, ncclAllGather of the updated slices and the unpack into the four parameter outputs.
// The two problems differ only in the gradient's collective. Reads PKB's argument order: X_local,
// y_local, W1, b1, W2, b2, exp_avg_part, exp_avg_sq_part; outputs W1, b1, W2, b2, the two moments.
// Host twin: zero_shard_host.h.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/adam.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/mlp.cuh"
#include "pkbw/toolkit/scale.cuh"
#include "pkbw/toolkit/zero_shard.h"

namespace pkbw::tk {

inline int zero_shard_step(const Context& ctx, GradientSum sum) {
    const DType d = ctx.input(0).dtype;
    const ncclDataType_t nd = nccl_dtype(d);
    const MlpShape s{ctx.input(0).shape[0], ctx.input(0).shape[1], ctx.input(2).shape[0],
                     ctx.input(4).shape[0]};
    const long long part = ctx.input(6).numel();
    const std::size_t elem = element_size(d), bytes = static_cast<std::size_t>(s.numel()) * elem;
    char* w = static_cast<char*>(ctx.scratch("pkbw_tk_zero_params", bytes));
    char* g = static_cast<char*>(ctx.scratch("pkbw_tk_zero_grad", bytes));
    char* w_part = static_cast<char*>(ctx.scratch("pkbw_tk_zero_param_part", part * elem));
    const void* inputs[4] = {ctx.input(2).data, ctx.input(3).data, ctx.input(4).data, ctx.input(5).data};
    PKBW_TRY(mlp_pack(ctx, d, s, inputs, w));
    PKBW_CHECK(ctx,
               ncclBroadcast(w, w, static_cast<std::size_t>(s.numel()), nd, 0, ctx.nccl(), ctx.stream()));
    PKBW_TRY(mlp_mse_gradient(ctx, d, s, w, ctx.input(0).data, ctx.input(1).data, g));
    const std::size_t at = static_cast<std::size_t>(part * ctx.rank) * elem;
    char* g_part = g + at; // ZeRO-1: this rank's slice of the all-reduced gradient
    if (sum == GradientSum::AllReduce) {
        PKBW_CHECK(ctx, ncclAllReduce(g, g, static_cast<std::size_t>(s.numel()), nd, ncclSum, ctx.nccl(),
                                      ctx.stream()));
    } else {
        g_part = static_cast<char*>(ctx.scratch("pkbw_tk_zero_grad_part", part * elem));
        PKBW_CHECK(ctx, ncclReduceScatter(g, g_part, static_cast<std::size_t>(part), nd, ncclSum, ctx.nccl(),
                                          ctx.stream()));
    }
    PKBW_TRY(divide_in_place(ctx, d, g_part, part, static_cast<double>(ctx.world_size)));
    PKBW_TRY(adam_update(ctx, d, part, g_part, w + at, ctx.input(6).data, ctx.input(7).data, w_part,
                         ctx.output(4).data, ctx.output(5).data, adam_hyper(ctx, AdamRule::ScaledStep)));
    PKBW_CHECK(ctx, ncclAllGather(w_part, w, static_cast<std::size_t>(part), nd, ctx.nccl(), ctx.stream()));
    void* outputs[4] = {ctx.output(0).data, ctx.output(1).data, ctx.output(2).data, ctx.output(3).data};
    PKBW_TRY(mlp_unpack(ctx, d, s, w, outputs));
    return finish(ctx);
}

} // namespace pkbw::tk
