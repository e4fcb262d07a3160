// PKB problem 22: gradient clipping with expert parallelism: the EP grads are pre-scaled by 1/ep_size
// and their sum of squares is reduced over the EP-FSDP group (strided) then the EP group
// (contiguous); the non-EP term over WORLD.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

// PKB's ep_size = max(1, W / 2).
int ep_size(const ProblemConfig& c) {
    return std::max(1, c.world_size / 2);
}

class ClipGradNormEp final : public BasicProblem {
public:
    ClipGradNormEp()
        : BasicProblem({.id = 22,
                        .stem = "22_clip_grad_norm_ep",
                        .category = "TI",
                        .title = "Gradient clipping by the global L2 norm with expert parallelism",
                        .description =
                            "Every rank holds a non-EP and an EP gradient [M, N] (standard normal); "
                            "ep_size = max(1, W/2). When ep_size > 1 the EP grad is scaled by "
                            "1/ep_size in place; its fp32 sum of squares is all-reduced over the "
                            "EP-FSDP group (ranks ep_size apart) then the EP group (ep_size "
                            "consecutive ranks), the non-EP one over WORLD. Every rank returns the "
                            "0-dim fp32 norm; both grads are scaled in place by max_norm / norm "
                            "when it exceeds max_norm (1.0).",
                        .mutates_inputs = true}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"non_ep_grad_tensors[0]", c.dtype, {c.m, c.n}}, {"ep_grad_tensors[0]", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig&, int) const override {
        return {{"output", DType::F32, {}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return {{"max_norm", 1.0}, {"norm_type", 2.0}, {"ep_size", static_cast<double>(ep_size(c))}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = 2 * mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 4,
                .flops = 3.0 * 2 * mn(c),
                .memory_bytes = 3 * bytes};
    }
};

} // namespace

const Problem& problem_22() {
    static const ClipGradNormEp problem;
    return problem;
}

} // namespace pkbw::problems
