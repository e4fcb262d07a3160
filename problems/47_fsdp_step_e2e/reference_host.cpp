// Host oracle for PKB problem 47 on the toolkit's host MLP, AdamW and dtype collectives: the shards
// all-gathered into the flat parameters, the flat MSE gradient, this rank's slice of its rounded sum
// over ranks (reduce-scatter) divided by W, and AdamW with decoupled decay on the old shard.
#include "pkbw/solution.h"
#include "pkbw/toolkit/adam_host.h"
#include "pkbw/toolkit/dtype_collectives_host.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/mlp_host.h"

#include <vector>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.input(0).dtype;
    double shapes[6];
    if (ctx.param_list("param_shapes", shapes, 6) != 6) {
        return ctx.fail(
            "47 host oracle: param_shapes must list 6 sizes (hidden, d_in, hidden, d_out, hidden, d_out)");
    }
    const tk::MlpShape s{ctx.input(0).shape[0], static_cast<long long>(shapes[1]),
                         static_cast<long long>(shapes[0]), static_cast<long long>(shapes[3])};
    const std::size_t part = static_cast<std::size_t>(ctx.input(2).numel());
    const std::vector<double> shard = tk::to_f64(ctx.input(2));
    const std::vector<double> flat = tk::all_gather_f64(ctx, shard);
    const std::vector<double> grad =
        tk::mlp_mse_gradient_f64(d, s, flat, tk::to_f64(ctx.input(0)), tk::to_f64(ctx.input(1)));
    std::vector<double> g =
        tk::all_reduce_sum_rounded(ctx, d, grad, part * static_cast<std::size_t>(ctx.rank), part);
    for (double& x : g) {
        x = tk::round_to(d, x / ctx.world_size);
    }
    std::vector<double> theta = shard, m = tk::to_f64(ctx.input(3)), v = tk::to_f64(ctx.input(4));
    tk::adam_update_f64(d, g, theta, m, v, tk::adam_hyper(ctx, tk::AdamRule::DecoupledDecay));
    tk::store_all(ctx.output(0), theta);
    tk::store_all(ctx.output(1), m);
    tk::store_all(ctx.output(2), v);
    return 0;
}
