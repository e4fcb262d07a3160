// Host oracle for PKB problem 43: the Adam step in double, rounded to the dtype after every torch
// op PKB performs, then a host all-gather of the updated shard.
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

double load(const pkbw::TensorView& t, std::int64_t i) {
    return pkbw::element_to_f64(t.dtype,
                                static_cast<const std::byte*>(t.data) + i * pkbw::element_size(t.dtype));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.input(0).dtype;
    const std::int64_t p = ctx.input(0).numel();
    const double lr = ctx.param("lr", 1e-3), beta1 = ctx.param("beta1", 0.9),
                 beta2 = ctx.param("beta2", 0.999);
    const double eps = ctx.param("eps", 1e-8);
    const double step = ctx.param("step", 1);
    const double bc1 = 1.0 - std::pow(beta1, step), bc2 = 1.0 - std::pow(beta2, step);
    auto r = [d](double x) { return round_to(d, x); };
    std::vector<double> w(static_cast<std::size_t>(p));
    for (std::int64_t i = 0; i < p; ++i) {
        const double g = load(ctx.input(0), i);
        const double m = r(r(load(ctx.input(2), i) * beta1) + (1.0 - beta1) * g);
        const double v = r(r(load(ctx.input(3), i) * beta2) + (1.0 - beta2) * g * g);
        const double denom = r(r(std::sqrt(r(v / bc2))) + eps);
        w[i] = r(load(ctx.input(1), i) + r(r(r(m / bc1) / denom) * -lr));
    }
    std::vector<double> all(w.size() * ctx.world_size);
    ctx.all_gather_host(w.data(), w.size() * sizeof(double), all.data());
    const pkbw::TensorView& out = ctx.output(0);
    for (std::size_t i = 0; i < all.size(); ++i) {
        pkbw::f64_to_element(out.dtype, all[i],
                             static_cast<std::byte*>(out.data) + i * pkbw::element_size(out.dtype));
    }
    return 0;
}
