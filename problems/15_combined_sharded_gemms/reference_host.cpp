// Host oracle for PKB problem 15: gather x, then only this rank's row block (the other ranks add
// zeros to it): silu(x W1) and its product with W2 in double, each GEMM and the SiLU rounded to the
// dtype as PKB's tensors are.
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
    const pkbw::TensorView& x_local = ctx.input(0);
    const pkbw::TensorView& w1 = ctx.input(1);
    const pkbw::TensorView& w2 = ctx.input(2);
    const pkbw::TensorView& out = ctx.output(0);
    const pkbw::DType dt = out.dtype;
    const int world = ctx.world_size;
    const std::int64_t rows = x_local.shape[0], hl = x_local.shape[1], hidden = w1.shape[0], f = w1.shape[1];
    const std::int64_t rows_local = rows / world;
    std::vector<std::byte> gathered(x_local.nbytes() * static_cast<std::size_t>(world));
    ctx.all_gather_host(x_local.data, x_local.nbytes(), gathered.data());
    const std::vector<double> shards = to_f64(gathered.data(), x_local.dtype, rows * hidden);
    // x rows of this rank: x[row][r * hl + j] = shard r [row][j]
    std::vector<double> x(static_cast<std::size_t>(rows_local * hidden));
    for (std::int64_t i = 0; i < rows_local; ++i) {
        const std::int64_t row = ctx.rank * rows_local + i;
        for (int r = 0; r < world; ++r) {
            for (std::int64_t j = 0; j < hl; ++j) {
                x[i * hidden + r * hl + j] = shards[(r * rows + row) * hl + j];
            }
        }
    }
    std::vector<double> a = gemm_rounded(x, to_f64(w1.data, w1.dtype, hidden * f), rows_local, f, hidden, dt);
    for (double& v : a) {
        v = round_to(dt, v / (1.0 + std::exp(-v)));
    }
    const std::vector<double> y =
        gemm_rounded(a, to_f64(w2.data, w2.dtype, f * hidden), rows_local, hidden, f, dt);
    for (std::int64_t i = 0; i < rows_local * hidden; ++i) {
        store(out, i, y[i]);
    }
    return 0;
}
