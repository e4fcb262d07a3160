// Host oracle for PKB problem 45: the reduce-scatter as a host all-gather and a double sum of this
// rank's chunk rounded to D once, the division by W rounded to D, then the RMSNorm in double.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <cmath>
#include <vector>

namespace {

double round_to(pkbw::DType dtype, double value) {
    std::byte buf[8];
    pkbw::f64_to_element(dtype, value, buf);
    return pkbw::element_to_f64(dtype, buf);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::TensorView& gamma = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const pkbw::DType d = in.dtype;
    const std::size_t size = pkbw::element_size(d);
    const std::int64_t rows = out.shape[0], hidden = out.shape[1];
    const std::int64_t chunk = rows * hidden;
    const double eps = ctx.param("eps", 1e-5);
    std::vector<std::byte> all(in.nbytes() * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(in.data, in.nbytes(), all.data());
    std::vector<double> x(static_cast<std::size_t>(chunk));
    for (std::int64_t i = 0; i < chunk; ++i) {
        double sum = 0;
        for (int r = 0; r < ctx.world_size; ++r) {
            sum += pkbw::element_to_f64(d, all.data() + r * in.nbytes() + (ctx.rank * chunk + i) * size);
        }
        x[i] = round_to(d, round_to(d, sum) / ctx.world_size);
    }
    const auto* g = static_cast<const std::byte*>(gamma.data);
    for (std::int64_t row = 0; row < rows; ++row) {
        double squares = 0;
        for (std::int64_t j = 0; j < hidden; ++j) {
            squares += x[row * hidden + j] * x[row * hidden + j];
        }
        const double rms = 1.0 / std::sqrt(squares / static_cast<double>(hidden) + eps);
        for (std::int64_t j = 0; j < hidden; ++j) {
            const double y = x[row * hidden + j] * rms * pkbw::element_to_f64(d, g + j * size);
            pkbw::f64_to_element(out.dtype, y, static_cast<std::byte*>(out.data) + (row * hidden + j) * size);
        }
    }
    return 0;
}
