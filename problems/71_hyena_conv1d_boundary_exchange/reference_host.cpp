// Host oracle for PKB problem 71: every rank's x gathered, the neighbours' chunk tails taken with
// PKB's edge rules (zeros before rank 0; the last rank's own a-tail after it), the toolkit's float64
// depthwise causal conv on each chunk, rounded once.
#include "pkbw/solution.h"
#include "pkbw/toolkit/depthwise_conv_host.h"
#include "pkbw/toolkit/host.h"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& x = ctx.input(0);
    const pkbw::TensorView& w = ctx.input(1);
    const int rank = ctx.rank, world = ctx.world_size;
    const long long rows = x.shape[0] * x.shape[1], len = x.shape[2] / 2, taps = w.shape[2], pad = taps - 1;
    const std::vector<double> mine = tk::to_f64(x);
    const std::vector<double> all = tk::all_gather_f64(ctx, mine);
    // The last `pad` samples of chunk `which` (0 = a, 1 = b) of rank `r`.
    auto tail = [&](int r, int which) {
        std::vector<double> t(static_cast<std::size_t>(rows * pad));
        for (long long row = 0; row < rows; ++row)
            for (long long k = 0; k < pad; ++k)
                t[row * pad + k] = all[(r * rows + row) * 2 * len + which * len + len - pad + k];
        return t;
    };
    const std::vector<double> prev_a = rank > 0 ? tail(rank - 1, 0) : std::vector<double>(rows * pad, 0.0);
    const std::vector<double> next_b = rank < world - 1 ? tail(rank + 1, 1) : tail(rank, 0);
    std::vector<double> y(mine.size());
    const std::vector<double> weights = tk::to_f64(w);
    tk::depthwise_causal_conv_f64(rows, w.shape[0], len, taps, 2 * len, mine, 0, prev_a, weights, y);
    tk::depthwise_causal_conv_f64(rows, w.shape[0], len, taps, 2 * len, mine, len, next_b, weights, y);
    tk::store_all(ctx.output(0), y);
    return 0;
}
