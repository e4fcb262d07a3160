// Host oracle for PKB problem 75: every rank's inputs gathered; this rank's heads of all W·L tokens
// taken in all-to-all order (source rank, then its tokens); q, k normalised, the decay and the
// recurrence in double (toolkit delta_rule_f64), o rounded to D; every rank's o gathered and this
// rank's tokens taken back head by head.
#include "pkbw/solution.h"
#include "pkbw/toolkit/delta_rule_host.h"
#include "pkbw/toolkit/host.h"

#include <algorithm>
#include <cmath>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const int world = ctx.world_size, me = ctx.rank;
    const pkbw::TensorView& q = ctx.input(0);
    const pkbw::DType dt = q.dtype;
    const long long seq = q.shape[1], heads = q.shape[2], dk = q.shape[3], dv = ctx.input(2).shape[3];
    const long long lh = heads / world, tokens = world * seq;
    std::vector<std::vector<double>> all(5);
    for (int i = 0; i < 5; ++i)
        all[i] = tk::all_gather_f64(ctx, tk::to_f64(ctx.input(i)));
    const std::vector<double> a_log = tk::to_f64(ctx.input(5)), dt_bias = tk::to_f64(ctx.input(6));

    std::vector<double> results(static_cast<std::size_t>(tokens * lh * dv));
    for (long long h = 0; h < lh; ++h) {
        const long long g = me * lh + h; // global head
        std::vector<double> qs(tokens * dk), ks(tokens * dk), vs(tokens * dv), decay(tokens * dk),
            beta(tokens);
        for (long long t = 0; t < tokens; ++t) {
            const long long p = t / seq, s = t % seq, at = p * seq * heads + s * heads + g;
            const double q_scale = 1.0 / std::sqrt(static_cast<double>(dk));
            tk::normalized_f64(&all[0][at * dk], dk, q_scale, 1e-6, &qs[t * dk]);
            tk::normalized_f64(&all[1][at * dk], dk, 1.0, 1e-6, &ks[t * dk]);
            for (long long e = 0; e < dv; ++e)
                vs[t * dv + e] = all[2][at * dv + e];
            const double x = all[3][at] + dt_bias[h];
            const double softplus = x > 20 ? x : std::log1p(std::exp(x));
            std::fill(decay.begin() + t * dk, decay.begin() + (t + 1) * dk,
                      std::exp(-std::exp(a_log[h]) * softplus));
            beta[t] = all[4][at];
        }
        const std::vector<double> o = tk::delta_rule_f64(tokens, dk, dv, qs, ks, vs, decay, beta);
        for (long long t = 0; t < tokens; ++t)
            for (long long e = 0; e < dv; ++e)
                results[(t * lh + h) * dv + e] = tk::round_to(dt, o[t * dv + e]);
    }
    // Rank p's results are [W·L, lh, dv]; this rank's tokens are p's rows me·L ...
    const std::vector<double> everyone = tk::all_gather_f64(ctx, results);
    std::vector<double> out(static_cast<std::size_t>(seq * heads * dv));
    for (int p = 0; p < world; ++p)
        for (long long s = 0; s < seq; ++s)
            for (long long h = 0; h < lh; ++h)
                for (long long e = 0; e < dv; ++e)
                    out[(s * heads + p * lh + h) * dv + e] =
                        everyone[p * results.size() + ((me * seq + s) * lh + h) * dv + e];
    tk::store_all(ctx.output(0), out);
    return 0;
}
