// Host oracle for PKB problem 21: the sum of squares of all grads in double, summed over ranks
// (toolkit all_reduce_sum_f64); the norm is sqrt of the total. The grads are then scaled in place as
// PKB does (its check ignores them), by the coefficient rounded to fp32 as PKB's 0-dim fp32 tensor.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <cmath>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    if (ctx.param("norm_type", 2.0) != 2.0) {
        return ctx.fail("21 oracle: only norm_type 2 is implemented (PKB's only value)");
    }
    double local = 0;
    for (int k = 0; k < ctx.num_inputs; ++k) {
        local += tk::sum_of_squares_f64(tk::to_f64(ctx.input(k)));
    }
    const double norm = std::sqrt(tk::all_reduce_sum_f64(ctx, {local})[0]);
    tk::store(ctx.output(0), 0, norm);
    const double max_norm = ctx.param("max_norm", 1.0);
    if (norm > max_norm) {
        const double coef = tk::round_to(pkbw::DType::F32, max_norm / norm);
        for (int k = 0; k < ctx.num_inputs; ++k) {
            std::vector<double> g = tk::to_f64(ctx.input(k));
            for (double& v : g) {
                v *= coef;
            }
            tk::store_all(ctx.input(k), g);
        }
    }
    return 0;
}
