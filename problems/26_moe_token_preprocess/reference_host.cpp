// Host oracle for PKB problem 26 (MoE token preprocessing): tokens per expert as double sums of the
// mask, every rank's counts by the toolkit's host all-gather, and the four outputs from them. All
// values are integers, so the oracle is exact and equals any fp32 summation order.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& mask = ctx.input(0);
    const int experts = static_cast<int>(ctx.param("num_experts", 8));
    if (mask.ndim != 3 || mask.shape[0] != experts || experts % ctx.world_size != 0) {
        return ctx.fail("26 oracle: expert_mask must be [num_experts, top_k, M] with W dividing num_experts");
    }
    const int world = ctx.world_size, local_experts = experts / world;
    const std::vector<double> counts =
        tk::row_sums_f64(tk::to_f64(mask), experts, mask.shape[1] * mask.shape[2]);
    const std::vector<double> gathered = tk::all_gather_f64(ctx, counts); // [W, E]
    for (int d = 0; d < world; ++d) {
        double to_d = 0;
        for (int j = 0; j < local_experts; ++j) {
            to_d += counts[static_cast<std::size_t>(d * local_experts + j)];
        }
        tk::store(ctx.output(0), d, to_d);
    }
    std::vector<double> sum(static_cast<std::size_t>(local_experts), 0.0);
    for (int s = 0; s < world; ++s) {
        double from_s = 0;
        for (int j = 0; j < local_experts; ++j) {
            const double c = gathered[static_cast<std::size_t>(s * experts + ctx.rank * local_experts + j)];
            tk::store(ctx.output(2), s * local_experts + j, c);
            from_s += c;
            sum[static_cast<std::size_t>(j)] += c;
        }
        tk::store(ctx.output(1), s, from_s);
    }
    tk::store_all(ctx.output(3), sum);
    return 0;
}
