// Host oracle for PKB problem 17: RoPE in double with PyTorch's per-op rounding to the dtype, host
// all-gather of the results, placement along the sequence.
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
    const pkbw::TensorView& q = ctx.input(0);
    const std::int64_t batch = q.shape[0], seq = q.shape[1], heads = q.shape[2], dim = q.shape[3];
    const std::int64_t local = q.numel();
    const pkbw::DType dt = q.dtype;
    const std::vector<double> cs = to_f64(ctx.input(2).data, dt, batch * seq * dim);
    const std::vector<double> sn = to_f64(ctx.input(3).data, dt, batch * seq * dim);
    const int world = ctx.world_size;
    const std::int64_t inner = local / batch; // one rank's chunk of one batch entry
    for (int t = 0; t < 2; ++t) {
        const std::vector<double> x = to_f64(ctx.input(t).data, dt, local);
        std::vector<double> y(static_cast<std::size_t>(local));
        for (std::int64_t i = 0; i < local; ++i) {
            const std::int64_t d = i % dim;
            const std::int64_t pos = i / (heads * dim);
            const double rotated = d < dim / 2 ? -x[i + dim / 2] : x[i - dim / 2];
            const double a = round_to(dt, x[i] * cs[pos * dim + d]);
            const double b = round_to(dt, rotated * sn[pos * dim + d]);
            y[i] = round_to(dt, a + b);
        }
        std::vector<double> all(y.size() * static_cast<std::size_t>(world));
        ctx.all_gather_host(y.data(), y.size() * sizeof(double), all.data());
        for (int w = 0; w < world; ++w) {
            for (std::int64_t b = 0; b < batch; ++b) {
                for (std::int64_t j = 0; j < inner; ++j) {
                    store(ctx.output(t), (b * world + w) * inner + j, all[w * local + b * inner + j]);
                }
            }
        }
    }
    return 0;
}
