// Host oracle for PKB problem 16: local GEMM in double rounded to the dtype; one host all-gather per row
// block, summed by its owner in double.
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

// Row-major C[m, n] = A[m, k] · B[k, n] in double, each element rounded to `dtype` (the GEMM's
// output tensor).
std::vector<double> gemm_rounded(const std::vector<double>& a, const std::vector<double>& b, std::int64_t m,
                                 std::int64_t n, std::int64_t k, pkbw::DType dtype) {
    std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
    for (std::int64_t i = 0; i < m; ++i) {
        double* row = &c[i * n];
        for (std::int64_t j = 0; j < k; ++j) {
            const double x = a[i * k + j];
            const double* brow = &b[j * n];
            for (std::int64_t col = 0; col < n; ++col) {
                row[col] += x * brow[col];
            }
        }
    }
    for (double& v : c) {
        v = round_to(dtype, v);
    }
    return c;
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a = ctx.input(0);
    const pkbw::TensorView& b = ctx.input(1);
    const pkbw::TensorView& out = ctx.output(0);
    const std::int64_t m = a.shape[0], kl = a.shape[1], n = b.shape[1];
    const int world = ctx.world_size;
    const std::vector<double> c =
        gemm_rounded(to_f64(a.data, a.dtype, m * kl), to_f64(b.data, b.dtype, kl * n), m, n, kl, out.dtype);
    const std::int64_t block = (m / world) * n;
    std::vector<double> all(static_cast<std::size_t>(block * world));
    for (int k = 0; k < world; ++k) {
        ctx.all_gather_host(c.data() + k * block, block * sizeof(double), all.data());
        if (k != ctx.rank) {
            continue;
        }
        for (std::int64_t i = 0; i < block; ++i) {
            double sum = 0;
            for (int r = 0; r < world; ++r) {
                sum += all[r * block + i];
            }
            store(out, i, sum);
        }
    }
    return 0;
}
