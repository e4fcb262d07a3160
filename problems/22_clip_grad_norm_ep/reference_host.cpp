// Host oracle for PKB problem 22: the EP grad scaled by 1/ep_size and rounded to D (in place, as PKB),
// sums of squares in double; the non-EP term summed over all ranks, the EP term over the EP-FSDP group
// (ranks ep_size apart) then the EP group (ep_size consecutive ranks) with the group-aware host
// all-gather, or over all ranks in PKB's degenerate layout; then the clip of both grads.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <cmath>
#include <vector>

namespace {

double sum_over(const pkbw::Context& ctx, const pkbw::SubComm& group, double value) {
    std::vector<double> all(static_cast<std::size_t>(group.size));
    ctx.all_gather_host(group, &value, sizeof(value), all.data());
    double sum = 0;
    for (const double v : all) {
        sum += v;
    }
    return sum;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    if (ctx.param("norm_type", 2.0) != 2.0) {
        return ctx.fail("22 oracle: only norm_type 2 is implemented (PKB's only value)");
    }
    const int ep_size = static_cast<int>(ctx.param("ep_size", 1));
    std::vector<double> non_ep = tk::to_f64(ctx.input(0));
    std::vector<double> ep = tk::to_f64(ctx.input(1));
    if (ep_size > 1) {
        for (double& v : ep) {
            v = tk::round_to(ctx.input(1).dtype, v / ep_size);
        }
        tk::store_all(ctx.input(1), ep);
    }
    const double non_ep_total = tk::all_reduce_sum_f64(ctx, {tk::sum_of_squares_f64(non_ep)})[0];
    double ep_total = tk::sum_of_squares_f64(ep);
    if (ep_size > 1 && ctx.world_size % ep_size == 0) {
        ep_total = sum_over(ctx, ctx.sub_comm_strided(ep_size), ep_total);
        ep_total = sum_over(ctx, ctx.sub_comm_blocks(ep_size), ep_total);
    } else {
        ep_total = tk::all_reduce_sum_f64(ctx, {ep_total})[0];
    }
    const double norm = std::sqrt(non_ep_total + ep_total);
    tk::store(ctx.output(0), 0, norm);
    const double max_norm = ctx.param("max_norm", 1.0);
    if (norm > max_norm) {
        const double coef = tk::round_to(pkbw::DType::F32, max_norm / norm);
        for (int k = 0; k < 2; ++k) {
            std::vector<double> g = k == 0 ? non_ep : ep;
            for (double& v : g) {
                v *= coef;
            }
            tk::store_all(ctx.input(k), g);
        }
    }
    return 0;
}
