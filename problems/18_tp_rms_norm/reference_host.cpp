// Host oracle for PKB problem 18: row sums of squares in double, exchanged with a host all-gather;
// the normalised value is rounded to the dtype before the weight multiplies it, as in PKB.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <cmath>
#include <vector>

namespace {

std::vector<double> to_f64(const void* data, pkbw::DType dtype, std::int64_t count) {
    std::vector<double> v(static_cast<std::size_t>(count));
    const auto* p = static_cast<const std::byte*>(data);
    const std::size_t size = pkbw::element_size(dtype);
    for (std::int64_t i = 0; i < count; ++i) {
        v[i] = pkbw::element_to_f64(dtype, p + i * size);
    }
    return v;
}

// Rounds to `dtype` as storing into a tensor of that dtype would.
double round_to(pkbw::DType dtype, double value) {
    std::byte buf[8];
    pkbw::f64_to_element(dtype, value, buf);
    return pkbw::element_to_f64(dtype, buf);
}

void store(const pkbw::TensorView& out, std::int64_t i, double value) {
    pkbw::f64_to_element(out.dtype, value,
                         static_cast<std::byte*>(out.data) + i * pkbw::element_size(out.dtype));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const std::int64_t m = h.shape[0], n = h.shape[1];
    const double eps = ctx.param("variance_epsilon", 1e-5);
    const std::vector<double> hv = to_f64(h.data, h.dtype, m * n);
    const std::vector<double> wv = to_f64(w.data, w.dtype, n);
    std::vector<double> sums(static_cast<std::size_t>(m), 0.0);
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            sums[i] += hv[i * n + j] * hv[i * n + j];
        }
    }
    std::vector<double> all(sums.size() * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(sums.data(), sums.size() * sizeof(double), all.data());
    const double hidden = static_cast<double>(n) * ctx.world_size;
    for (std::int64_t i = 0; i < m; ++i) {
        double total = 0;
        for (int r = 0; r < ctx.world_size; ++r) {
            total += all[r * sums.size() + i];
        }
        const double scale = 1.0 / std::sqrt(total / hidden + eps);
        for (std::int64_t j = 0; j < n; ++j) {
            store(out, i * n + j, wv[j] * round_to(out.dtype, hv[i * n + j] * scale));
        }
    }
    return 0;
}
