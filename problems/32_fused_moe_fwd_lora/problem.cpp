// PKB problem 32: problem 31's fused MoE forward (8 experts whatever W: router, count exchange,
// variable all-to-all, one SiLU-GLU MLP per rank on every token it receives, all-to-all back,
// weighted scatter-add) with rank-8 LoRA on the gate, up and down projections (moe_forward.h has
// the inputs, params and tie rows).
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
    r.lora = true;
    return r;
}

} // namespace

const Problem& problem_32() {
    static const MoeForwardProblem problem(
        {.id = 32,
         .stem = "32_fused_moe_fwd_lora",
         .category = "MoE",
         .title = "Fused MoE forward with rank-8 LoRA: router, all-to-all dispatch, SiLU-GLU MLP, combine",
         .description =
             "Problem 31 with LoRA. Each rank routes its M tokens [M, N] with its own router (logits = "
             "hidden_states gate_weightᵀ + gate_bias, softmax over the 8 experts in the dtype, top-2, the "
             "chosen probabilities are the weights; ties: lower expert index). Expert e lives on rank e / "
             "(8/W); tokens go to their experts' ranks by a variable all-to-all, each rank applies its ONE "
             "MLP to every token it received: g = gate(x) + (x A_gᵀ) B_gᵀ, u = up(x) + (x A_uᵀ) B_uᵀ, y = "
             "silu(g) * u, out = down(y) + (y A_dᵀ) B_dᵀ (nn.Linear N->128->N with biases, LoRA factors A "
             "[8, in], B [out, 8] standard normal, its own weights); results return by the reverse "
             "all-to-all and each token's output is the sum of its two results times their weights. W "
             "divides 8.",
         .atol = 1e-2,
         .rtol = 1e-2},
        rules());
    return problem;
}

} // namespace pkbw::problems
