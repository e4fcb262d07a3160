// Host oracle for PKB problem 40 on the toolkit's host MLP and Adam (double, torch's roundings):
// rank 0's parameters and moments through a host all-gather, the flat MSE gradient, its sum over
// ranks rounded per addition in rank order (NCCL's dtype reduction rounds per step too), the
// division by W rounded, then Adam.
#include "pkbw/solution.h"
#include "pkbw/toolkit/adam_host.h"
#include "pkbw/toolkit/dtype_collectives_host.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/mlp_host.h"

#include <vector>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.input(0).dtype;
    const tk::MlpShape s{ctx.input(0).shape[0], ctx.input(0).shape[1], ctx.input(2).shape[0],
                         ctx.input(4).shape[0]};
    std::vector<double> w = tk::broadcast_f64(ctx, tk::mlp_pack_inputs_f64(ctx, 2));
    std::vector<double> m = tk::broadcast_f64(ctx, tk::mlp_pack_inputs_f64(ctx, 6));
    std::vector<double> v = tk::broadcast_f64(ctx, tk::mlp_pack_inputs_f64(ctx, 10));
    const std::vector<double> grad =
        tk::mlp_mse_gradient_f64(d, s, w, tk::to_f64(ctx.input(0)), tk::to_f64(ctx.input(1)));
    std::vector<double> avg = tk::all_reduce_sum_rounded(ctx, d, grad);
    for (double& g : avg) {
        g = tk::round_to(d, g / ctx.world_size);
    }
    tk::adam_update_f64(d, avg, w, m, v, tk::adam_hyper(ctx, tk::AdamRule::ScaledStep));
    tk::mlp_store_unpacked(ctx, s, w, 0);
    tk::mlp_store_unpacked(ctx, s, m, 4);
    tk::mlp_store_unpacked(ctx, s, v, 8);
    return 0;
}
