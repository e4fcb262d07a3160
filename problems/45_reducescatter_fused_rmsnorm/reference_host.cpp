// Host oracle for PKB problem 45: the reduce-scatter as a double sum over ranks of this rank's chunk
// rounded to D once, the division by W rounded to D, then the RMSNorm in double.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <cmath>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& out = ctx.output(0);
    const pkbw::DType d = ctx.input(0).dtype;
    const std::int64_t rows = out.shape[0], hidden = out.shape[1];
    const std::int64_t chunk = rows * hidden;
    const double eps = ctx.param("eps", 1e-5);
    const std::vector<double> sums = tk::all_reduce_sum_f64(ctx, tk::to_f64(ctx.input(0)));
    const std::vector<double> gamma = tk::to_f64(ctx.input(1));
    std::vector<double> x(sums.begin() + ctx.rank * chunk, sums.begin() + (ctx.rank + 1) * chunk);
    for (double& v : x) {
        v = tk::round_to(d, tk::round_to(d, v) / ctx.world_size);
    }
    const std::vector<double> squares = tk::row_sum_squares_f64(x, rows, hidden);
    for (std::int64_t row = 0; row < rows; ++row) {
        const double rms = 1.0 / std::sqrt(squares[row] / static_cast<double>(hidden) + eps);
        for (std::int64_t j = 0; j < hidden; ++j) {
            tk::store(out, row * hidden + j, x[row * hidden + j] * rms * gamma[j]);
        }
    }
    return 0;
}
