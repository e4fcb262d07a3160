// Host oracle for PKB problem 46: the shard's logits in double, rounded to the dtype after the
// matmul and again after the bias add (PKB's two ops), exchanged with a host all-gather.
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <vector>

namespace {

double load(const pkbw::TensorView& t, std::int64_t i) {
    return pkbw::element_to_f64(t.dtype,
                                static_cast<const std::byte*>(t.data) + i * pkbw::element_size(t.dtype));
}

double round_to(pkbw::DType dtype, double value) {
    std::byte buf[8];
    pkbw::f64_to_element(dtype, value, buf);
    return pkbw::element_to_f64(dtype, buf);
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const pkbw::TensorView& b = ctx.input(2);
    const pkbw::TensorView& out = ctx.output(0);
    const std::int64_t tokens = h.shape[0], hidden = h.shape[1], local = w.shape[0];
    std::vector<double> logits(static_cast<std::size_t>(tokens * local));
    for (std::int64_t t = 0; t < tokens; ++t) {
        for (std::int64_t v = 0; v < local; ++v) {
            double dot = 0;
            for (std::int64_t k = 0; k < hidden; ++k) {
                dot += load(h, t * hidden + k) * load(w, v * hidden + k);
            }
            logits[t * local + v] = round_to(out.dtype, round_to(out.dtype, dot) + load(b, v));
        }
    }
    std::vector<double> all(logits.size() * static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(logits.data(), logits.size() * sizeof(double), all.data());
    const std::int64_t vocab = local * ctx.world_size;
    auto* dst = static_cast<std::byte*>(out.data);
    for (int r = 0; r < ctx.world_size; ++r) {
        for (std::int64_t t = 0; t < tokens; ++t) {
            for (std::int64_t v = 0; v < local; ++v) {
                pkbw::f64_to_element(out.dtype, all[(r * tokens + t) * local + v],
                                     dst + (t * vocab + r * local + v) * pkbw::element_size(out.dtype));
            }
        }
    }
    return 0;
}
