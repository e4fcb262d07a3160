// PKB problem 51: problem 31's fused MoE forward with fewer experts than ranks: E = the largest
// divisor of W in [2, W/2] (1 when there is none), top-k = min(2, E), and the exchanges run inside
// expert-parallel groups of E consecutive ranks (PKB's cached new_group; the world when E >= W).
#include "moe_forward.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

// PKB's _moe_narrow_num_experts: the largest E in [2, W/2] dividing W, else 1.
int narrow_experts(int w) {
    for (int e = w / 2; e > 1; --e) {
        if (w % e == 0) {
            return e;
        }
    }
    return 1;
}

MoeForwardRules rules() {
    MoeForwardRules r;
    r.experts = narrow_experts;
    r.top_k = [](int w) { return std::min(2, narrow_experts(w)); };
    // PKB: the world when E >= W (only W = 1), else groups of E consecutive ranks.
    r.ep_size = [](int w) { return narrow_experts(w) >= w ? w : narrow_experts(w); };
    r.refuse_world = [](int) -> std::optional<std::string> { return std::nullopt; };
    return r;
}

} // namespace

const Problem& problem_51() {
    static const MoeForwardProblem problem(
        {.id = 51,
         .stem = "51_moe_ep_narrow",
         .category = "MoE",
         .title = "Fused MoE forward, narrow EP: E < W experts, EP groups of E consecutive ranks",
         .description =
             "Problem 31's fused MoE forward with E = the largest divisor of W in [2, W/2] (1 if none: "
             "W = 2, 3 or prime), top-k = min(2, E), expert-parallel groups of E consecutive ranks "
             "(param ep_size; the world when E >= W). Each rank routes its M tokens [M, N] with its own "
             "router (linear + bias, softmax over E in the dtype, top-k, weights not renormalised; ties: "
             "lower expert index); within its group, token counts are all-gathered and tokens go to "
             "their experts' ranks by a variable all-to-all; each rank applies its one SiLU-GLU MLP "
             "(N->128->N, biases) to everything it received; the results come back and are summed with "
             "their weights. With E = 1 (W = 2, 3) there is no exchange: out = w * MLP(x), w = 1.",
         .atol = 1e-2,
         .rtol = 1e-2},
        rules());
    return problem;
}

} // namespace pkbw::problems
