// PKB problem 21: FSDP gradient clipping without expert parallelism: the global L2 norm of three
// gradient tensors (fp32 sums of squares all-reduced over WORLD), grads scaled in place when the
// norm exceeds max_norm.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr int kGrads = 3;

class ClipGradNormNoEp final : public BasicProblem {
public:
    ClipGradNormNoEp()
        : BasicProblem({.id = 21,
                        .stem = "21_clip_grad_norm_no_ep",
                        .category = "TI",
                        .title = "Gradient clipping by the global L2 norm (no EP)",
                        .description =
                            "Every rank holds three gradients [M, N] (standard normal). Every rank "
                            "returns the 0-dim fp32 total norm sqrt(sum over ranks and tensors of "
                            "||g||^2), computed in fp32; when it exceeds max_norm (1.0) the grads "
                            "are multiplied in place by max_norm / norm (PKB does not check them).",
                        .mutates_inputs = true}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        std::vector<TensorSpec> specs;
        for (int k = 0; k < kGrads; ++k) {
            specs.push_back({"grad_tensors[" + std::to_string(k) + "]", c.dtype, {c.m, c.n}});
        }
        return specs;
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig&, int) const override {
        return {{"output", DType::F32, {}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"max_norm", 1.0}, {"norm_type", 2.0}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = kGrads * mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 4,
                .flops = 2.0 * kGrads * mn(c) + kGrads * mn(c),
                .memory_bytes = 3 * bytes}; // read for the norm, read and written for the scaling
    }
};

} // namespace

const Problem& problem_21() {
    static const ClipGradNormNoEp problem;
    return problem;
}

} // namespace pkbw::problems
