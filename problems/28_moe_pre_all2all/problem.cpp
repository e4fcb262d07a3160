// PKB problem 28: MoE token dispatch before the experts: expert-major permutation of the tokens by
// a top-2 routing mask, all_to_all_single with given split lists, and the regroup of the received
// chunks by local expert (Megatron's token_pre_all2all).
#include "moe_all2all.h"

#include <string>

namespace pkbw::problems {
namespace {

using namespace moe_all2all;

class MoePreAllToAll final : public MoeAllToAllProblem {
public:
    MoePreAllToAll()
        : MoeAllToAllProblem(
              {.id = 28,
               .stem = "28_moe_pre_all2all",
               .category = "MoE",
               .title = "MoE dispatch: expert-major permute, all-to-all, regroup by local expert",
               .description = "Every rank holds hidden_states [M, N] (standard normal), expert_mask "
                              "[8, 2, M] float32 (one-hot: each token picks 2 distinct experts, slot j "
                              "its j-th pick) and num_global_tokens_per_local_expert [W, 8/W] int64 (2M "
                              "spread evenly); list params input_splits = output_splits (2M/W each), "
                              "num_experts = 8. routing_map = expert_mask.sum(dim=1); the tokens are "
                              "permuted expert-major (masked_select order), exchanged with "
                              "all_to_all_single, and the received chunks (source rank w, local expert "
                              "l, sized by the counts) regrouped local expert first. Returns (the "
                              "regrouped rows [2M, N], routing_map [8, M] float32, the permutation "
                              "[2M] int64, torch.Size([M, N])). W must divide 8."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"hidden_states", c.dtype, {c.m, c.n}},
                {"expert_mask", DType::F32, {kExperts, kTopK, c.m}},
                {"num_global_tokens_per_local_expert", DType::I64, {c.world_size, kExperts / c.world_size}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        // sum(output_splits) = 2M rows.
        return {{"output_0", c.dtype, {routed(c), c.n}},
                {"output_1", DType::F32, {kExperts, c.m}},
                {"output_2", DType::I64, {routed(c)}}};
    }
    std::map<std::string, std::string> output_values(const ProblemConfig& c, int) const override {
        // PKB returns org_hidden_states_shape, a torch.Size.
        return {{"output_3", "[" + std::to_string(c.m) + ", " + std::to_string(c.n) + "]"}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const CounterRng hidden_rng = input_rng(c, info().id, rank, 0);
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], hidden_rng, exact_amplitude(c.dtype, 1));
        } else {
            fill_normal(inputs[0], hidden_rng);
        }
        const std::vector<long long> choices =
            tk::distinct_expert_choices(input_rng(c, info().id, rank, 1), c.m, kTopK, kExperts);
        fill_values(inputs[1], tk::one_hot_expert_mask(choices, c.m, kTopK, kExperts));
        fill_values(inputs[2], tk::spread_counts(routed(c), kExperts));
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double rows = static_cast<double>(routed(c)) * static_cast<double>(c.n) * elem_bytes(c);
        const double hidden = mn(c) * elem_bytes(c);
        // Reads hidden and the mask, writes the permuted rows twice (before and after the exchange),
        // the regrouped rows, the map and the permutation.
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = rows,
                .flops = 0,
                .memory_bytes = hidden + 4.0 * kExperts * kTopK * static_cast<double>(c.m) + 3 * rows +
                                4.0 * kExperts * static_cast<double>(c.m) +
                                8.0 * static_cast<double>(routed(c))};
    }
};

} // namespace

const Problem& problem_28() {
    static const MoePreAllToAll problem;
    return problem;
}

} // namespace pkbw::problems
