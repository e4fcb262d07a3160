// Host oracle for PKB problem 21: per-tensor sums of squares in double, exchanged with a host
// all-gather and summed in rank order; the norm is sqrt of the total. The grads are then scaled in
// place as PKB does (its check ignores them, but a candidate's later calls see the same inputs).
#include "pkbw/core/dtype.h"
#include "pkbw/solution.h"

#include <cmath>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const double max_norm = ctx.param("max_norm", 1.0);
    const double p = ctx.param("norm_type", 2.0);
    if (p != 2.0) {
        return ctx.fail("21 oracle: only norm_type 2 is implemented (PKB's only value)");
    }
    double local = 0;
    for (int k = 0; k < ctx.num_inputs; ++k) {
        const pkbw::TensorView& g = ctx.input(k);
        const auto* bytes = static_cast<const std::byte*>(g.data);
        const std::size_t size = pkbw::element_size(g.dtype);
        for (std::int64_t i = 0; i < g.numel(); ++i) {
            const double v = pkbw::element_to_f64(g.dtype, bytes + i * size);
            local += v * v;
        }
    }
    std::vector<double> all(static_cast<std::size_t>(ctx.world_size));
    ctx.all_gather_host(&local, sizeof(local), all.data());
    double total = 0;
    for (const double s : all) {
        total += s;
    }
    const double norm = std::sqrt(total);
    pkbw::f64_to_element(pkbw::DType::F32, norm, static_cast<std::byte*>(ctx.output(0).data));
    if (norm > max_norm) {
        // PKB multiplies by an fp32 coefficient; the product is rounded to the grad's dtype.
        std::byte coef_f32[4];
        pkbw::f64_to_element(pkbw::DType::F32, max_norm / norm, coef_f32);
        const double coef = pkbw::element_to_f64(pkbw::DType::F32, coef_f32);
        for (int k = 0; k < ctx.num_inputs; ++k) {
            const pkbw::TensorView& g = ctx.input(k);
            auto* bytes = static_cast<std::byte*>(g.data);
            const std::size_t size = pkbw::element_size(g.dtype);
            for (std::int64_t i = 0; i < g.numel(); ++i) {
                pkbw::f64_to_element(g.dtype, pkbw::element_to_f64(g.dtype, bytes + i * size) * coef,
                                     bytes + i * size);
            }
        }
    }
    return 0;
}
