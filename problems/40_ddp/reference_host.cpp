// Host oracle for PKB problem 40 on the toolkit's host MLP and Adam (double, torch's roundings):
// rank 0's parameters and moments through a host all-gather, the flat MSE gradient, its sum over
// ranks rounded per addition in rank order (NCCL's dtype reduction rounds per step too), the
// division by W rounded, then Adam.
#include "pkbw/solution.h"
#include "pkbw/toolkit/adam_host.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/mlp_host.h"

#include <vector>

namespace tk = pkbw::tk;

namespace {

// Inputs first..first+3 packed into one flat vector (torch's _flatten_dense_tensors).
std::vector<double> flatten(const pkbw::Context& ctx, int first) {
    std::vector<double> flat;
    for (int k = 0; k < 4; ++k) {
        const std::vector<double> part = tk::to_f64(ctx.input(first + k));
        flat.insert(flat.end(), part.begin(), part.end());
    }
    return flat;
}

// Rank 0's copy of `values` (a broadcast from rank 0).
std::vector<double> from_rank0(const pkbw::Context& ctx, const std::vector<double>& values) {
    const std::vector<double> all = tk::all_gather_f64(ctx, values);
    return std::vector<double>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(values.size()));
}

} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::DType d = ctx.input(0).dtype;
    const tk::MlpShape s{ctx.input(0).shape[0], ctx.input(0).shape[1], ctx.input(2).shape[0],
                         ctx.input(4).shape[0]};
    std::vector<double> w = from_rank0(ctx, flatten(ctx, 2));
    std::vector<double> m = from_rank0(ctx, flatten(ctx, 6));
    std::vector<double> v = from_rank0(ctx, flatten(ctx, 10));
    const std::vector<double> grad =
        tk::mlp_mse_gradient_f64(d, s, w, tk::to_f64(ctx.input(0)), tk::to_f64(ctx.input(1)));
    const std::vector<double> all = tk::all_gather_f64(ctx, grad);
    std::vector<double> avg(grad.size());
    for (std::size_t i = 0; i < grad.size(); ++i) {
        double sum = all[i];
        for (int r = 1; r < ctx.world_size; ++r) {
            sum = tk::round_to(d, sum + all[r * grad.size() + i]);
        }
        avg[i] = tk::round_to(d, sum / ctx.world_size);
    }
    tk::adam_update_f64(d, avg, w, m, v, tk::adam_hyper(ctx, tk::AdamRule::ScaledStep));
    const std::vector<double>* results[3] = {&w, &m, &v};
    for (int j = 0; j < 3; ++j) {
        for (int k = 0; k < 4; ++k) {
            const pkbw::TensorView& out = ctx.output(4 * j + k);
            for (long long i = 0; i < s.count(k); ++i) {
                tk::store(out, i, (*results[j])[static_cast<std::size_t>(s.offset(k) + i)]);
            }
        }
    }
    return 0;
}
