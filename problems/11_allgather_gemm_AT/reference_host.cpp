// Host oracle for PKB problem 11: the same product as 12 (gather the A shards, multiply in double,
// round once); the transposes of PKB's reference do not change the values.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <algorithm>
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

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& a_local = ctx.input(0);
    const pkbw::TensorView& b_view = ctx.input(1);
    const pkbw::TensorView& c = ctx.output(0);
    const std::int64_t m = a_local.shape[0], kl = a_local.shape[1], n = b_view.shape[1];
    const int world = ctx.world_size;
    const std::int64_t k = kl * world;
    if (b_view.shape[0] != k) {
        return ctx.fail("11_allgather_gemm_AT host reference: B must have W * K_local rows");
    }
    std::vector<std::byte> gathered(a_local.nbytes() * static_cast<std::size_t>(world));
    ctx.all_gather_host(a_local.data, a_local.nbytes(), gathered.data());
    // a[m][r * kl + j] = shard r's [m][j]
    const std::vector<double> shards = to_f64(gathered.data(), a_local.dtype, m * k);
    const std::vector<double> b = to_f64(b_view.data, b_view.dtype, k * n);
    std::vector<double> row(static_cast<std::size_t>(n));
    auto* out = static_cast<std::byte*>(c.data);
    const std::size_t size = pkbw::element_size(c.dtype);
    for (std::int64_t i = 0; i < m; ++i) {
        std::fill(row.begin(), row.end(), 0.0);
        for (int r = 0; r < world; ++r) {
            for (std::int64_t j = 0; j < kl; ++j) {
                const double a = shards[(r * m + i) * kl + j];
                const double* brow = &b[(r * kl + j) * n];
                for (std::int64_t col = 0; col < n; ++col) {
                    row[col] += a * brow[col];
                }
            }
        }
        for (std::int64_t col = 0; col < n; ++col) {
            pkbw::f64_to_element(c.dtype, row[col], out + (i * n + col) * size);
        }
    }
    return 0;
}
