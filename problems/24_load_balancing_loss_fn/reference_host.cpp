// Host oracle for PKB problem 24 (load-balancing loss). The softmax is computed in double and rounded
// to the dtype (softmax_host.h, shared with the descriptor's tie rows), since those rounded probabilities
// decide the top-k (torch computes the softmax of a D tensor in fp32 and stores it in D); the top-k is the
// toolkit's selection (moe_router.h: lower expert index first at a tie). The token fractions are exact
// counts / M rounded to fp32, the mean probabilities are rounded to D (torch's mean of a D tensor); the sum
// of products is in double, rounded once to fp32, summed over ranks in double and divided by W.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/moe_router.h"
#include "pkbw/toolkit/softmax_host.h"

#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    namespace tk = pkbw::tk;
    const pkbw::TensorView& logits = ctx.input(0);
    const int experts = static_cast<int>(ctx.param("num_experts", 8));
    const int top_k = static_cast<int>(ctx.param("top_k", 2));
    if (logits.ndim != 2 || logits.shape[1] != experts || top_k < 1 || top_k > experts) {
        return ctx.fail("24 oracle: gate_logits must be [M, num_experts] with 1 <= top_k <= num_experts");
    }
    const long long tokens = logits.shape[0];
    const std::vector<double> x = tk::to_f64(logits);
    std::vector<double> counts(static_cast<std::size_t>(top_k * experts), 0.0);
    std::vector<double> prob_sums(static_cast<std::size_t>(experts), 0.0);
    const std::vector<double> probs = tk::softmax_rows_rounded_f64(logits.dtype, x, tokens, experts);
    std::vector<int> chosen(static_cast<std::size_t>(top_k));
    for (long long t = 0; t < tokens; ++t) {
        const double* row = probs.data() + t * experts;
        for (int e = 0; e < experts; ++e) {
            prob_sums[e] += row[e];
        }
        tk::router_top_k(row, experts, top_k, chosen.data());
        for (int k = 0; k < top_k; ++k) {
            counts[static_cast<std::size_t>(k * experts + chosen[k])] += 1.0;
        }
    }
    const double m = static_cast<double>(tokens);
    double local = 0;
    for (int e = 0; e < experts; ++e) {
        const double mean_prob = tk::round_to(logits.dtype, prob_sums[e] / m);
        for (int k = 0; k < top_k; ++k) {
            local += tk::round_to(pkbw::DType::F32, counts[static_cast<std::size_t>(k * experts + e)] / m) *
                     mean_prob;
        }
    }
    local = tk::round_to(pkbw::DType::F32, local * experts);
    const double total = tk::all_reduce_sum_f64(ctx, {local})[0];
    tk::store(ctx.output(0), 0, total / ctx.world_size);
    return 0;
}
