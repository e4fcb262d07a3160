// PKB problem 50: problem 31's fused MoE forward with two experts per rank (E = 2W, top-2), the wide
// expert-parallel case (moe_forward.h has the inputs).
#include "moe_forward.h"

namespace pkbw::problems {
namespace {

MoeForwardRules rules() {
    MoeForwardRules r;
    r.experts = [](int w) { return 2 * w; };
    r.top_k = [](int) { return 2; };
    r.ep_size = [](int w) { return w; };
    r.refuse_world = [](int) -> std::optional<std::string> { return std::nullopt; };
    return r;
}

} // namespace

const Problem& problem_50() {
    static const MoeForwardProblem problem(
        {.id = 50,
         .stem = "50_moe_ep_wide",
         .category = "MoE",
         .title = "Fused MoE forward, wide EP: E = 2W experts, two per rank, top-2",
         .description =
             "Problem 31's fused MoE forward with E = 2W experts (experts 2r and 2r+1 on rank r): each "
             "rank routes its M tokens [M, N] with its own router (linear + bias, softmax over E in the "
             "dtype, top-2, weights not renormalised; ties: lower expert index), tokens go to their "
             "experts' ranks by a variable all-to-all after an all-gather of the counts, each rank "
             "applies its one SiLU-GLU MLP (N->128->N, biases) to everything it received (whichever of "
             "its two experts), the results come back and are summed with their weights. Any W.",
         .atol = 1e-2,
         .rtol = 1e-2},
        rules());
    return problem;
}

} // namespace pkbw::problems
