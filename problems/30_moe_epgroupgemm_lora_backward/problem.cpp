// PKB problem 30: the LoRA-gradient all-reduces of an expert-parallel grouped-GEMM backward: three
// in-place SUM all-reduces in D, the tensors returned.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kRank = 8; // LoRA rank r

class MoeLoraBackward final : public BasicProblem {
public:
    MoeLoraBackward()
        : BasicProblem({.id = 30,
                        .stem = "30_moe_epgroupgemm_lora_backward",
                        .category = "MoE",
                        .title = "LoRA gradient all-reduces (three tensors, in place)",
                        .description =
                            "Every rank holds grad_fc1_1_lora_A [8, N], grad_fc1_2_lora_A [8, N] and "
                            "grad_fc2_lora_B [N, 8] (standard normal). PKB all-reduces each in place "
                            "(SUM, in D) and returns them: every rank returns the three sums.",
                        .mutates_inputs = true}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"grad_fc1_1_lora_A", c.dtype, {kRank, c.n}},
                {"grad_fc1_2_lora_A", c.dtype, {kRank, c.n}},
                {"grad_fc2_lora_B", c.dtype, {c.n, kRank}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output_0", c.dtype, {kRank, c.n}},
                {"output_1", c.dtype, {kRank, c.n}},
                {"output_2", c.dtype, {c.n, kRank}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, c.world_size));
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = 3.0 * kRank * static_cast<double>(c.n) * elem_bytes(c);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = bytes,
                .flops = 3.0 * kRank * static_cast<double>(c.n) * (c.world_size - 1),
                .memory_bytes = 2 * bytes};
    }
};

} // namespace

const Problem& problem_30() {
    static const MoeLoraBackward problem;
    return problem;
}

} // namespace pkbw::problems
