// PKB problem 24: the Switch-Transformer load-balancing loss (HF Mixtral's load_balancing_loss_fn)
// averaged over ranks: softmax of the router logits over 8 experts, top-2 experts per token, the
// fraction of tokens routed to each expert times its mean router probability, summed, times E,
// all-reduced and divided by W.
#include "pkbw/toolkit/moe_router.h"
#include "pkbw/toolkit/softmax_host.h"
#include "problem_util.h"

#include <string>

namespace pkbw::problems {
namespace {

namespace tk = pkbw::tk;

constexpr std::int64_t kExperts = 8; // PKB's num_experts
constexpr std::int64_t kTopK = 2;    // PKB's top_k

class LoadBalancingLoss final : public BasicProblem {
public:
    LoadBalancingLoss()
        : BasicProblem({.id = 24,
                        .stem = "24_load_balancing_loss_fn",
                        .category = "MoE",
                        .title = "MoE load-balancing loss (softmax, top-2, all-reduce mean)",
                        .description =
                            "Every rank holds router logits [M, 8] (standard normal). p = softmax over "
                            "the 8 experts, rounded to the dtype; the top-2 experts of p per token; f[k, "
                            "e] = fraction of tokens whose k-th choice is e (fp32), P[e] = mean of p over "
                            "tokens (in the dtype). Every rank returns the 0-dim fp32 loss 8 * sum(f * "
                            "P), summed over ranks and divided by W. Tie rule of the top-2: at equal "
                            "probabilities the lower expert index is chosen.",
                        .mutates_inputs = false}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"gate_logits", c.dtype, {c.m, kExperts}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig&, int) const override {
        return {{"output", DType::F32, {}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    // PKB passes num_experts and top_k positionally (and attention_mask = None, which pkbw has no
    // input for: the unmasked branch is the only one PKB runs).
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"num_experts", static_cast<double>(kExperts)}, {"top_k", static_cast<double>(kTopK)}};
    }
    // The loss every rank returns depends on every rank's routing, so its one row (0-dim output: row 0)
    // is a tie row when any rank has a token whose 2nd and 3rd probabilities, rounded to the dtype,
    // are equal. Other ranks' inputs are rebuilt from the config (make_inputs is deterministic). Such a
    // tie moves one token's count between two experts: the loss changes by 8|P[a] - P[b]|/M at most.
    TieRowsByOutput tie_rows(const ProblemConfig& c, int rank,
                             const std::vector<Tensor>& inputs) const override {
        std::int64_t tie_tokens = 0;
        int tie_ranks = 0;
        for (int r = 0; r < c.world_size; ++r) {
            const std::vector<Tensor> rebuilt = r == rank ? std::vector<Tensor>{} : build_inputs(c, r);
            const Tensor& logits = r == rank ? inputs.at(0) : rebuilt.at(0);
            const std::int64_t tokens = logits.shape().at(0);
            const std::vector<double> probs = tk::softmax_rows_rounded_f64(
                c.dtype, tk::to_f64(logits.data(), logits.dtype(), logits.numel()), tokens, kExperts);
            std::int64_t here = 0;
            for (std::int64_t t = 0; t < tokens; ++t) {
                const double* row = probs.data() + t * kExperts;
                int chosen[kTopK];
                tk::router_top_k(row, static_cast<int>(kExperts), static_cast<int>(kTopK), chosen);
                here +=
                    tk::router_is_tie_row(row, static_cast<int>(kExperts), static_cast<int>(kTopK), chosen)
                        ? 1
                        : 0;
            }
            tie_tokens += here;
            tie_ranks += here > 0 ? 1 : 0;
        }
        if (tie_tokens == 0) {
            return {};
        }
        return {
            {"output",
             {{0},
              "top-2 of the " + std::string(dtype_name(c.dtype)) + " router softmax: 2nd and 3rd equal for " +
                  std::to_string(tie_tokens) + " tokens on " + std::to_string(tie_ranks) + " ranks"}}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double logits = static_cast<double>(c.m * kExperts);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 4,
                .flops = 6.0 * logits, // exp, sum, divide, mean, top-2 compares per element
                .memory_bytes = logits * elem_bytes(c) + 4};
    }
};

} // namespace

const Problem& problem_24() {
    static const LoadBalancingLoss problem;
    return problem;
}

} // namespace pkbw::problems
