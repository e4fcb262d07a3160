// Host oracle for PKB problem 74: the sequence gathered over the CP group (world or ranks 2 apart), the
// per-key-dim decay and the recurrence in double per head (toolkit delta_rule_f64), o rounded to D,
// summed over the TP pair in double and rounded once, the rank's CP slice stored.
#include "pkbw/solution.h"
#include "pkbw/toolkit/cp_layout.h"
#include "pkbw/toolkit/delta_rule_host.h"
#include "pkbw/toolkit/host.h"

#include <algorithm>
#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int tp = static_cast<int>(ctx.param("tp_size", 1));
    if (tp < 1 || ctx.world_size % tp != 0) {
        return ctx.fail("74 oracle: tp_size must divide W");
    }
    const tk::CpGroups groups =
        tp > 1 ? tk::tp_cp_groups(ctx, tp)
               : tk::CpGroups{ctx.sub_comm_blocks(ctx.world_size), ctx.sub_comm_blocks(1)};
    const pkbw::TensorView& q = ctx.input(0);
    const pkbw::DType dt = q.dtype;
    const long long seq = q.shape[1], heads = q.shape[2], dk = q.shape[3], dv = ctx.input(2).shape[3];
    const long long tokens = groups.cp.size * seq;
    std::vector<std::vector<double>> full(5);
    for (int i = 0; i < 5; ++i)
        full[i] = tk::all_gather_f64(ctx, groups.cp, tk::to_f64(ctx.input(i)));
    const std::vector<double> a_log = tk::to_f64(ctx.input(5)), dt_bias = tk::to_f64(ctx.input(6));

    std::vector<double> out(static_cast<std::size_t>(tokens * heads * dv));
    for (long long h = 0; h < heads; ++h) {
        std::vector<double> qs(tokens * dk), ks(tokens * dk), vs(tokens * dv), decay(tokens * dk),
            beta(tokens);
        for (long long t = 0; t < tokens; ++t) {
            const long long at = t * heads + h;
            const double q_scale = 1.0 / std::sqrt(static_cast<double>(dk));
            tk::normalized_f64(&full[0][at * dk], dk, q_scale, 1e-12, &qs[t * dk]);
            tk::normalized_f64(&full[1][at * dk], dk, 1.0, 1e-12, &ks[t * dk]);
            for (long long e = 0; e < dk; ++e) {
                const double x = std::exp(a_log[h]) * (full[3][at * dk + e] + dt_bias[h * dk + e]);
                decay[t * dk + e] = std::exp(-5.0 / (1.0 + std::exp(-x)));
            }
            for (long long e = 0; e < dv; ++e)
                vs[t * dv + e] = full[2][at * dv + e];
            beta[t] = 1.0 / (1.0 + std::exp(-full[4][at]));
        }
        const std::vector<double> o = tk::delta_rule_f64(tokens, dk, dv, qs, ks, vs, decay, beta);
        for (long long t = 0; t < tokens; ++t)
            for (long long e = 0; e < dv; ++e)
                out[(t * heads + h) * dv + e] = tk::round_to(dt, o[t * dv + e]);
    }
    if (tp > 1)
        out = tk::all_reduce_sum_f64(ctx, groups.other, out);
    const std::size_t slice = static_cast<std::size_t>(seq * heads * dv);
    tk::store_all(ctx.output(0), std::vector<double>(out.begin() + groups.cp.rank * slice,
                                                     out.begin() + (groups.cp.rank + 1) * slice));
    return 0;
}
