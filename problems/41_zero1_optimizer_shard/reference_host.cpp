// Host oracle for PKB problem 41 on the toolkit's host MLP, Adam and rounded rank sum: rank 0's
// parameters, the flat gradient summed over ranks (all-reduce) and divided by W, Adam on this rank's
// slice, the updated slices gathered back into the four parameters.
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
    const std::size_t part = static_cast<std::size_t>(ctx.input(6).numel());
    const std::size_t begin = part * static_cast<std::size_t>(ctx.rank);
    const std::vector<double> mine = tk::mlp_pack_inputs_f64(ctx, 2);
    const std::vector<double> flat = tk::broadcast_f64(ctx, mine);
    const std::vector<double> grad =
        tk::mlp_mse_gradient_f64(d, s, flat, tk::to_f64(ctx.input(0)), tk::to_f64(ctx.input(1)));
    std::vector<double> g = tk::all_reduce_sum_rounded(ctx, d, grad); // all-reduce, then the slice
    std::vector<double> g_part(g.begin() + static_cast<std::ptrdiff_t>(begin),
                               g.begin() + static_cast<std::ptrdiff_t>(begin + part));
    for (double& x : g_part) {
        x = tk::round_to(d, x / ctx.world_size);
    }
    std::vector<double> w(flat.begin() + static_cast<std::ptrdiff_t>(begin),
                          flat.begin() + static_cast<std::ptrdiff_t>(begin + part));
    std::vector<double> m = tk::to_f64(ctx.input(6)), v = tk::to_f64(ctx.input(7));
    tk::adam_update_f64(d, g_part, w, m, v, tk::adam_hyper(ctx, tk::AdamRule::ScaledStep));
    tk::mlp_store_unpacked(ctx, s, tk::all_gather_f64(ctx, w), 0);
    tk::store_all(ctx.output(4), m);
    tk::store_all(ctx.output(5), v);
    return 0;
}
