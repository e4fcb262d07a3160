// Reference for PKB problem 42 on the toolkit: rank 0's flat parameters by ncclBroadcast, the MLP's
// flat gradient (tk::mlp_mse_gradient), ncclReduceScatter (sum, dtype) of it into this rank's slice and the
// division by W, Adam on this rank's slice into the moment outputs, ncclAllGather of the updated slices, and
// the unpack into the four parameter outputs.
#include "pkbw/solution.h"
#include "pkbw/toolkit/adam.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/mlp.cuh"
#include "pkbw/toolkit/scale.cuh"

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.input(0).dtype;
    const ncclDataType_t nd = pkbw::nccl_dtype(d);
    const tk::MlpShape s{ctx.input(0).shape[0], ctx.input(0).shape[1], ctx.input(2).shape[0],
                         ctx.input(4).shape[0]};
    const long long part = ctx.input(6).numel();
    const std::size_t elem = pkbw::element_size(d), bytes = static_cast<std::size_t>(s.numel()) * elem;
    char* w = static_cast<char*>(ctx.scratch("zero2_params", bytes));
    char* g = static_cast<char*>(ctx.scratch("zero2_grad", bytes));
    char* w_part = static_cast<char*>(ctx.scratch("zero2_param_part", part * elem));
    const void* inputs[4] = {ctx.input(2).data, ctx.input(3).data, ctx.input(4).data, ctx.input(5).data};
    PKBW_TRY(tk::mlp_pack(ctx, d, s, inputs, w));
    PKBW_CHECK(ctx,
               ncclBroadcast(w, w, static_cast<std::size_t>(s.numel()), nd, 0, ctx.nccl(), ctx.stream()));
    PKBW_TRY(tk::mlp_mse_gradient(ctx, d, s, w, ctx.input(0).data, ctx.input(1).data, g));
    char* g_part = static_cast<char*>(ctx.scratch("zero2_grad_part", part * elem));
    PKBW_CHECK(ctx, ncclReduceScatter(g, g_part, static_cast<std::size_t>(part), nd, ncclSum, ctx.nccl(),
                                      ctx.stream()));
    const std::size_t at = static_cast<std::size_t>(part * ctx.rank) * elem;
    PKBW_TRY(tk::divide_in_place(ctx, d, g_part, part, static_cast<double>(ctx.world_size)));
    PKBW_TRY(tk::adam_update(ctx, d, part, g_part, w + at, ctx.input(6).data, ctx.input(7).data, w_part,
                             ctx.output(4).data, ctx.output(5).data,
                             tk::adam_hyper(ctx, tk::AdamRule::ScaledStep)));
    PKBW_CHECK(ctx, ncclAllGather(w_part, w, static_cast<std::size_t>(part), nd, ctx.nccl(), ctx.stream()));
    void* outputs[4] = {ctx.output(0).data, ctx.output(1).data, ctx.output(2).data, ctx.output(3).data};
    PKBW_TRY(tk::mlp_unpack(ctx, d, s, w, outputs));
    return tk::finish(ctx);
}
