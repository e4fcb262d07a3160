// PKB problem 29: MoE token combine after the experts: regroup the expert outputs back to source-rank
// order, all_to_all_single back, and the weighted scatter-add unpermute into [M, N] (Megatron's
// tokens_post_all2all).
#include "moe_all2all.h"
#include "pkbw/core/dtype.h"

namespace pkbw::problems {
namespace {

using namespace moe_all2all;

class MoePostAllToAll final : public MoeAllToAllProblem {
public:
    MoePostAllToAll()
        : MoeAllToAllProblem({.id = 29,
                              .stem = "29_moe_post_all2all",
                              .category = "MoE",
                              .title = "MoE combine: regroup back, all-to-all back, weighted scatter-add",
                              .description =
                                  "Every rank holds expert_outputs [2M, N] (standard normal), "
                                  "routing_weights [M, 2] (softmax of 2 normals, in D), selected_experts "
                                  "[M, 2] int64 (each token's 2 distinct experts, ascending), "
                                  "num_global_tokens_per_local_expert [W, 8/W] int64 (2M spread evenly), "
                                  "routing_map [8, M] bool (consistent with selected_experts) and "
                                  "local_input_permutation_mapping [2M] int64 (the map's masked_select "
                                  "order); list params input_splits = output_splits (2M/W each), "
                                  "num_experts = 8, org_hidden_states_shape = [M, N]. The rows are "
                                  "regrouped source rank first (chunks split by the counts transposed), "
                                  "sent back with all_to_all_single, weighted by the token's routing weight "
                                  "for the row's expert and scatter-added into [M, N] at their tokens, "
                                  "every product and sum rounded to D. W must divide 8."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"expert_outputs", c.dtype, {routed(c), c.n}},
                {"routing_weights", c.dtype, {c.m, kTopK}},
                {"selected_experts", DType::I64, {c.m, kTopK}},
                {"num_global_tokens_per_local_expert", DType::I64, {c.world_size, kExperts / c.world_size}},
                {"routing_map", DType::Bool, {kExperts, c.m}},
                {"local_input_permutation_mapping", DType::I64, {routed(c)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const CounterRng rows_rng = input_rng(c, info().id, rank, 0);
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], rows_rng, exact_amplitude(c.dtype, kTopK));
        } else {
            fill_normal(inputs[0], rows_rng);
        }
        const DType dtype = c.dtype;
        const auto round_to_dtype = [dtype](double v) {
            std::byte buf[8];
            f64_to_element(dtype, v, buf);
            return element_to_f64(dtype, buf);
        };
        const tk::ConsistentRouting routing =
            tk::consistent_routing(input_rng(c, info().id, rank, 4), input_rng(c, info().id, rank, 1), c.m,
                                   kTopK, kExperts, round_to_dtype);
        fill_values(inputs[1], routing.weights);
        fill_values(inputs[2], routing.selected);
        fill_values(inputs[3], tk::spread_counts(routed(c), kExperts));
        fill_values(inputs[4], routing.routing_map);
        fill_values(inputs[5], routing.permutation);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        std::map<std::string, double> params = MoeAllToAllProblem::params(c);
        add_list_param(params, "org_hidden_states_shape",
                       {static_cast<double>(c.m), static_cast<double>(c.n)});
        return params;
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double rows = static_cast<double>(routed(c)) * static_cast<double>(c.n) * elem_bytes(c);
        // One multiply and one add per routed element.
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = rows,
                .flops = 2.0 * static_cast<double>(routed(c)) * static_cast<double>(c.n),
                .memory_bytes = 3 * rows + mn(c) * elem_bytes(c) +
                                static_cast<double>(c.m) * kTopK * (elem_bytes(c) + 8) +
                                static_cast<double>(kExperts * c.m) + 8.0 * static_cast<double>(routed(c))};
    }
};

} // namespace

const Problem& problem_29() {
    static const MoePostAllToAll problem;
    return problem;
}

} // namespace pkbw::problems
