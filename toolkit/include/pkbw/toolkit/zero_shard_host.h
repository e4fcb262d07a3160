// Host-oracle twin of zero_shard.cuh (pkbw reference toolkit): PKB 41/42's ZeRO step on the host MLP,
// Adam and rounded rank sum: rank 0's parameters, the flat gradient summed over ranks (all of it for
// ZeRO-1, this rank's slice for ZeRO-2; rounded to the dtype per addition as NCCL's sum) and divided by
// W, Adam on this rank's slice, the updated slices gathered back into the four parameters.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/adam_host.h"
#include "pkbw/toolkit/dtype_collectives_host.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/mlp_host.h"
#include "pkbw/toolkit/zero_shard.h"

#include <cstddef>
#include <vector>

namespace pkbw::tk {

inline int zero_shard_step_f64(const Context& ctx, GradientSum sum) {
    const DType d = ctx.input(0).dtype;
    const MlpShape s{ctx.input(0).shape[0], ctx.input(0).shape[1], ctx.input(2).shape[0],
                     ctx.input(4).shape[0]};
    const std::size_t part = static_cast<std::size_t>(ctx.input(6).numel());
    const std::size_t begin = part * static_cast<std::size_t>(ctx.rank);
    const auto slice = [&](const std::vector<double>& all) {
        return std::vector<double>(all.begin() + static_cast<std::ptrdiff_t>(begin),
                                   all.begin() + static_cast<std::ptrdiff_t>(begin + part));
    };
    const std::vector<double> flat = broadcast_f64(ctx, mlp_pack_inputs_f64(ctx, 2));
    const std::vector<double> grad =
        mlp_mse_gradient_f64(d, s, flat, to_f64(ctx.input(0)), to_f64(ctx.input(1)));
    std::vector<double> g_part = sum == GradientSum::AllReduce
                                     ? slice(all_reduce_sum_rounded(ctx, d, grad))
                                     : all_reduce_sum_rounded(ctx, d, grad, begin, part);
    for (double& x : g_part) {
        x = round_to(d, x / ctx.world_size);
    }
    std::vector<double> w = slice(flat);
    std::vector<double> m = to_f64(ctx.input(6)), v = to_f64(ctx.input(7));
    adam_update_f64(d, g_part, w, m, v, adam_hyper(ctx, AdamRule::ScaledStep));
    mlp_store_unpacked(ctx, s, all_gather_f64(ctx, w), 0);
    store_all(ctx.output(4), m);
    store_all(ctx.output(5), v);
    return 0;
}

} // namespace pkbw::tk
