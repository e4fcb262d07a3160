// Host oracle for PKB problem 46 on the toolkit: the shard's logits as a double GEMM rounded to the
// dtype, plus the bias rounded again (PKB's two ops), exchanged with a host all-gather and laid out
// [t, W, V/W] = [t, V].
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/permute_host.h"

#include <vector>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& h = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const pkbw::DType d = ctx.output(0).dtype;
    const std::int64_t tokens = h.shape[0], hidden = h.shape[1], local = w.shape[0];
    std::vector<double> logits =
        tk::gemm_rounded(tk::to_f64(h), tk::to_f64(w), tokens, local, hidden, d, false, true);
    const std::vector<double> bias = tk::to_f64(ctx.input(2));
    for (std::size_t i = 0; i < logits.size(); ++i) {
        logits[i] = tk::round_to(d, logits[i] + bias[i % static_cast<std::size_t>(local)]);
    }
    const long long shape[3] = {ctx.world_size, tokens, local};
    const int perm[3] = {1, 0, 2};
    tk::store_all(ctx.output(0), tk::permuted(tk::all_gather_f64(ctx, logits), 3, shape, perm));
    return 0;
}
