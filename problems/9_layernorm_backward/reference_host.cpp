// Host oracle for PKB problem 9: column sums in double (products rounded to the dtype, sums rounded
// to the dtype), exchanged with a host all-gather and summed in double.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <vector>

using pkbw::tk::round_to;
using pkbw::tk::store;
using pkbw::tk::to_f64;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& dy = ctx.input(1);
    const std::int64_t m = x.shape[0], n = x.shape[1];
    const pkbw::DType dt = ctx.output(0).dtype;
    const std::vector<double> xv = to_f64(x.data, x.dtype, m * n);
    const std::vector<double> dv = to_f64(dy.data, dy.dtype, m * n);
    std::vector<double> local(static_cast<std::size_t>(2 * n), 0.0); // gamma then beta
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            local[j] += round_to(dt, dv[i * n + j] * xv[i * n + j]);
            local[n + j] += dv[i * n + j];
        }
    }
    for (double& v : local) {
        v = round_to(dt, v);
    }
    const std::vector<double> sum = pkbw::tk::all_reduce_sum_f64(ctx, local);
    for (std::int64_t j = 0; j < 2 * n; ++j) {
        store(ctx.output(j < n ? 0 : 1), j % n, sum[j]);
    }
    return 0;
}
