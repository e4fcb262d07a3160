// PKB problem 23: gradient-accumulation loss scaling: the token-weighted loss sum all-reduced,
// normalised by the global token count, and the backward coefficient, all 0-dim tensors in D.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class GradAccLoss final : public BasicProblem {
public:
    GradAccLoss()
        : BasicProblem({.id = 23,
                        .stem = "23_grad_acc_loss",
                        .category = "TI",
                        .title = "Token-weighted loss all-reduce and its backward coefficient",
                        .description =
                            "Every rank holds a 0-dim loss (standard normal, dtype D), its int64 "
                            "valid-token count M*N, the global count W*M*N, grad_normalized_loss 1 "
                            "and grad_loss_sum 0. Every rank returns (sum_r loss_r*local / global, "
                            "sum_r loss_r*local, g_norm*local/global + g_sum*local), each a 0-dim "
                            "tensor in D with every operation rounded to D as torch does."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"loss", c.dtype, {}},
                {"local_valid_tokens", DType::I64, {}},
                {"global_valid_tokens", DType::I64, {}},
                {"grad_normalized_loss", c.dtype, {}},
                {"grad_loss_sum", c.dtype, {}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output_0", c.dtype, {}}, {"output_1", c.dtype, {}}, {"output_2", c.dtype, {}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], input_rng(c, info().id, rank, 0), exact_amplitude(c.dtype, c.world_size));
        } else {
            fill_normal(inputs[0], input_rng(c, info().id, rank, 0));
        }
        // PKB's counts are configuration constants, the same on every trial.
        fill_constant(inputs[1], static_cast<double>(c.m * c.n));
        fill_constant(inputs[2], static_cast<double>(c.world_size * c.m * c.n));
        fill_constant(inputs[3], 1.0);
        fill_constant(inputs[4], 0.0);
    }
    WorkModel work(const ProblemConfig& c) const override {
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = elem_bytes(c),
                .flops = 6,
                .memory_bytes = 5 * 8};
    }
};

} // namespace

const Problem& problem_23() {
    static const GradAccLoss problem;
    return problem;
}

} // namespace pkbw::problems
