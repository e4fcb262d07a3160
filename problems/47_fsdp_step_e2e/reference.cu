// Reference for PKB problem 47 on the toolkit: ncclAllGather of the parameter shards into the flat
// vector, tk::mlp_mse_gradient, ncclReduceScatter (sum, dtype) into this rank's gradient shard,
// tk::divide_in_place by W, and tk::adam_update with the decoupled-decay rule (AdamW on the old shard)
// straight into the three outputs.
#include "pkbw/solution.h"
#include "pkbw/toolkit/adam.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/mlp.cuh"
#include "pkbw/toolkit/scale.cuh"

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.input(0).dtype;
    const ncclDataType_t nd = pkbw::nccl_dtype(d);
    double shapes[6];
    if (ctx.param_list("param_shapes", shapes, 6) != 6) {
        return ctx.fail(
            "47 reference: param_shapes must list 6 sizes (hidden, d_in, hidden, d_out, hidden, d_out)");
    }
    const tk::MlpShape s{ctx.input(0).shape[0], static_cast<long long>(shapes[1]),
                         static_cast<long long>(shapes[0]), static_cast<long long>(shapes[3])};
    const long long part = ctx.input(2).numel();
    const std::size_t elem = pkbw::element_size(d);
    void* flat = ctx.scratch("fsdp_params", static_cast<std::size_t>(s.numel()) * elem);
    void* grad = ctx.scratch("fsdp_grad", static_cast<std::size_t>(s.numel()) * elem);
    void* g_part = ctx.scratch("fsdp_grad_shard", static_cast<std::size_t>(part) * elem);
    PKBW_CHECK(ctx, ncclAllGather(ctx.input(2).data, flat, static_cast<std::size_t>(part), nd, ctx.nccl(),
                                  ctx.stream()));
    PKBW_TRY(tk::mlp_mse_gradient(ctx, d, s, flat, ctx.input(0).data, ctx.input(1).data, grad));
    PKBW_CHECK(ctx, ncclReduceScatter(grad, g_part, static_cast<std::size_t>(part), nd, ncclSum, ctx.nccl(),
                                      ctx.stream()));
    PKBW_TRY(tk::divide_in_place(ctx, d, g_part, part, static_cast<double>(ctx.world_size)));
    PKBW_TRY(tk::adam_update(ctx, d, part, g_part, ctx.input(2).data, ctx.input(3).data, ctx.input(4).data,
                             ctx.output(0).data, ctx.output(1).data, ctx.output(2).data,
                             tk::adam_hyper(ctx, tk::AdamRule::DecoupledDecay)));
    return tk::finish(ctx);
}
