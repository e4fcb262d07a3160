// Host oracle for PKB problem 73 on the toolkit's host helpers. Every op PKB performs in the dtype is
// rounded to it here: the shifted logits (written back in place, as PKB's sub_), each exp, each rank's
// sum of exps (torch accumulates in fp32 and rounds once; here in double), the all-reduced sums (one
// rounding per addition, in rank order: tk::all_reduce_sum_rounded), the log and the difference.
#include "pkbw/solution.h"
#include "pkbw/toolkit/dtype_collectives_host.h"
#include "pkbw/toolkit/host.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const pkbw::DType d = logits.dtype;
    const std::int64_t local = logits.shape[logits.ndim - 1];
    const std::int64_t rows = logits.numel() / local;
    const std::int64_t start = ctx.rank * local;
    std::vector<double> x = tk::to_f64(logits);
    const std::vector<double> local_max = tk::row_max_f64(x, rows, local);
    const std::vector<double> all_max = tk::all_gather_f64(ctx, local_max);
    // [predicted (this rank's share), sum of exp] per row.
    std::vector<double> parts(static_cast<std::size_t>(2 * rows), 0.0);
    const auto* tgt = ctx.input(1).as<const std::int64_t>();
    for (std::int64_t i = 0; i < rows; ++i) {
        double m = all_max[i];
        for (int r = 1; r < ctx.world_size; ++r) {
            m = std::max(m, all_max[r * rows + i]);
        }
        double sum = 0;
        for (std::int64_t j = 0; j < local; ++j) {
            double& v = x[i * local + j];
            v = tk::round_to(d, v - m);
            sum += tk::round_to(d, std::exp(v));
        }
        const std::int64_t t = tgt[i] - start;
        parts[i] = (t >= 0 && t < local) ? x[i * local + t] : 0.0;
        parts[rows + i] = tk::round_to(d, sum);
    }
    tk::store_all(logits, x); // PKB's in-place sub_
    const std::vector<double> total = tk::all_reduce_sum_rounded(ctx, d, parts);
    for (std::int64_t i = 0; i < rows; ++i) {
        tk::store(ctx.output(0), i, tk::round_to(d, std::log(total[rows + i])) - total[i]);
    }
    return 0;
}
