// Host oracle for PKB problem 9: column sums in double (products rounded to the dtype, sums rounded
// to the dtype), exchanged with a host all-gather and summed in double.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

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
    std::vector<double> all(local.size() * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(local.data(), local.size() * sizeof(double), all.data());
    for (std::int64_t j = 0; j < 2 * n; ++j) {
        double sum = 0;
        for (int r = 0; r < ctx.world_size; ++r) {
            sum += all[r * local.size() + j];
        }
        store(ctx.output(j < n ? 0 : 1), j % n, sum);
    }
    return 0;
}
