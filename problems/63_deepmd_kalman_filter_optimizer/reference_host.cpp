// Host oracle for PKB problem 63: the Kalman step in double (PKB's own dtype is fp64, so the oracle
// computes in the problem's precision). H^T P H through the toolkit GEMMs (H^T P, then times H, in
// PKB's order), tmp summed over ranks with the host all-reduce, the updates elementwise, and every
// rank's new weights gathered with the host all-gather.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <vector>

namespace tk = pkbw::tk;

namespace {
constexpr int kBlocks = 8;
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.num_inputs != 3 * kBlocks + 1) {
        return ctx.fail("63 oracle: expects H[8], error, weights[8], P[8]");
    }
    const double lam = ctx.param("kalman_lambda", 0.98);
    const double nue = ctx.param("kalman_nue", 0.9987);
    const double err = tk::to_f64(ctx.input(kBlocks))[0];
    const std::int64_t n = ctx.input(0).shape[0];

    std::vector<std::vector<double>> h(kBlocks), p(kBlocks);
    double tmp = 0;
    for (int i = 0; i < kBlocks; ++i) {
        h[i] = tk::to_f64(ctx.input(i));
        p[i] = tk::to_f64(ctx.input(2 * kBlocks + 1 + i));
        const std::vector<double> htp = tk::gemm_f64(h[i], p[i], 1, n, n, true); // H^T P [1, n]
        tmp = tmp + (lam + tk::gemm_f64(htp, h[i], 1, 1, n)[0]);
    }
    tmp = tk::all_reduce_sum_f64(ctx, {tmp})[0];
    const double a = 1 / tmp;

    std::vector<double> new_weights;
    new_weights.reserve(static_cast<std::size_t>(kBlocks * n));
    const int p_out0 = kBlocks * ctx.world_size;
    for (int i = 0; i < kBlocks; ++i) {
        const std::vector<double> k = tk::gemm_f64(p[i], h[i], n, 1, n); // K = P H
        const std::vector<double> w = tk::to_f64(ctx.input(kBlocks + 1 + i));
        for (std::int64_t r = 0; r < n; ++r) {
            new_weights.push_back(w[r] + a * err * k[r]);
        }
        std::vector<double>& pi = p[i];
        for (std::int64_t r = 0; r < n; ++r) {
            for (std::int64_t c = 0; c < n; ++c) {
                pi[r * n + c] = (1 / lam) * (pi[r * n + c] - a * (k[r] * k[c]));
            }
        }
        tk::store_all(ctx.output(p_out0 + i), pi);
    }
    const std::vector<double> all = tk::all_gather_f64(ctx, new_weights);
    for (int j = 0; j < p_out0; ++j) {
        tk::store_all(ctx.output(j), std::vector<double>(all.begin() + j * n, all.begin() + (j + 1) * n));
    }
    tk::store(ctx.output(p_out0 + kBlocks), 0, nue * lam + 1 - nue);
    return 0;
}
