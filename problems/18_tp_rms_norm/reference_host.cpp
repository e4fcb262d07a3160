// Host oracle for PKB problem 18: row sums of squares in double, exchanged with a host all-gather;
// the normalised value is rounded to the dtype before the weight multiplies it, as in PKB.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <cmath>
#include <vector>

using pkbw::tk::round_to;
using pkbw::tk::store;
using pkbw::tk::to_f64;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const std::int64_t m = h.shape[0], n = h.shape[1];
    const double eps = ctx.param("variance_epsilon", 1e-5);
    const std::vector<double> hv = to_f64(h.data, h.dtype, m * n);
    const std::vector<double> wv = to_f64(w.data, w.dtype, n);
    const std::vector<double> total =
        pkbw::tk::all_reduce_sum_f64(ctx, pkbw::tk::row_sum_squares_f64(hv, m, n));
    const double hidden = static_cast<double>(n) * ctx.world_size;
    for (std::int64_t i = 0; i < m; ++i) {
        const double scale = 1.0 / std::sqrt(total[i] / hidden + eps);
        for (std::int64_t j = 0; j < n; ++j) {
            store(out, i * n + j, wv[j] * round_to(out.dtype, hv[i * n + j] * scale));
        }
    }
    return 0;
}
