// PKB problem 49: problem 31's fused MoE forward with as many experts as ranks (E = W, one expert per
// rank, top-2), the balanced expert-parallel case (moe_forward.h has the inputs).
#include "moe_forward.h"

namespace pkbw::problems {
namespace {

MoeForwardRules rules() {
    MoeForwardRules r;
    r.experts = [](int w) { return w; };
    r.top_k = [](int) { return 2; };
    r.ep_size = [](int w) { return w; };
    r.refuse_world = [](int w) -> std::optional<std::string> {
        if (w < 2) {
            return "top-2 needs at least 2 experts, and E = W (got W = " + std::to_string(w) + ")";
        }
        return std::nullopt;
    };
    return r;
}

} // namespace

const Problem& problem_49() {
    static const MoeForwardProblem problem(
        {.id = 49,
         .stem = "49_moe_ep_balanced",
         .category = "MoE",
         .title = "Fused MoE forward, balanced EP: E = W experts, one per rank, top-2",
         .description =
             "Problem 31's fused MoE forward with E = W experts (one per rank): each rank routes its M "
             "tokens [M, N] with its own router (linear + bias, softmax over E in the dtype, top-2, "
             "weights not renormalised; ties: lower expert index), tokens go to the rank of each chosen "
             "expert by a variable all-to-all after an all-gather of the counts, each rank applies its "
             "one SiLU-GLU MLP (N->128->N, biases) to everything it received, the results come back "
             "and are summed with their weights. W >= 2.",
         .atol = 1e-2,
         .rtol = 1e-2},
        rules());
    return problem;
}

} // namespace pkbw::problems
