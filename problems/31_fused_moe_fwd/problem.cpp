// PKB problem 31: the fused MoE forward with 8 experts whatever W: router (linear + bias, softmax,
// top-2), count exchange, variable all-to-all to the experts' ranks, one SiLU-GLU MLP per rank on
// every token it received, all-to-all back, weighted scatter-add (moe_forward.h has the inputs).
#include "moe_forward.h"

namespace pkbw::problems {
namespace {

constexpr int kExperts = 8;

MoeForwardRules rules() {
    MoeForwardRules r;
    r.experts = [](int) { return kExperts; };
    r.top_k = [](int) { return 2; };
    r.ep_size = [](int w) { return w; };
    r.refuse_world = [](int w) -> std::optional<std::string> {
        if (kExperts % w != 0) {
            return "W must divide the 8 experts (got W = " + std::to_string(w) + ")";
        }
        return std::nullopt;
    };
    return r;
}

} // namespace

const Problem& problem_31() {
    static const MoeForwardProblem problem(
        {.id = 31,
         .stem = "31_fused_moe_fwd",
         .category = "MoE",
         .title = "Fused MoE forward: router, all-to-all dispatch, SiLU-GLU MLP, combine (8 experts)",
         .description =
             "Each rank routes its M tokens [M, N] with its own router: logits = hidden_states "
             "gate_weightᵀ + gate_bias, softmax over the 8 experts in the dtype, top-2 (the chosen "
             "probabilities are the weights, not renormalised; ties: lower expert index). Expert e lives "
             "on rank e / (8/W). Token counts per expert are all-gathered, the tokens go to their experts' "
             "ranks by a variable all-to-all (expert-major order), each rank applies its ONE MLP "
             "down(silu(gate(x)) * up(x)) (nn.Linear N->128->N with biases, its own weights) to every "
             "token it received whatever the expert, the results return by the reverse all-to-all and "
             "each token's output is the sum of its two results times their weights. W divides 8.",
         .atol = 1e-2,
         .rtol = 1e-2},
        rules());
    return problem;
}

} // namespace pkbw::problems
