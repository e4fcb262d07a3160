// PKB problem 43: an Adam step on this rank's shard of the master weights, all-gathered.
#include "problem_util.h"
#include "shared_inputs.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

// PKB's shard size: clamp(64 M, 64, 4096).
std::int64_t shard_size(const ProblemConfig& c) {
    return std::max<std::int64_t>(64, std::min<std::int64_t>(c.m * 64, 4096));
}

class FusedAdamAllGather final : public BasicProblem {
public:
    FusedAdamAllGather()
        : BasicProblem({.id = 43,
                        .stem = "43_fused_adam_grad_unshard_allgather",
                        .category = "TI",
                        .title = "Sharded Adam step + all-gather",
                        .description =
                            "Rank r holds shard r (P = clamp(64 M, 64, 4096) elements) of a gradient and of "
                            "the master weights, and zero Adam moments [P]. It applies one bias-corrected "
                            "Adam step (lr 1e-3, betas 0.9/0.999, eps 1e-8, step 1 + trial mod 7; every op "
                            "rounded to the dtype, as PKB's torch ops) to copies of its shard, and every "
                            "rank returns the all-gathered updated weights [W P]. N is not used."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const std::int64_t p = shard_size(c);
        return {{"grad_shard", c.dtype, {p}},
                {"master_shard", c.dtype, {p}},
                {"exp_avg", c.dtype, {p}},
                {"exp_avg_sq", c.dtype, {p}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {shard_size(c) * c.world_size}}};
    }
    // PKB seeds with rank 0 and slices one full gradient and one full master vector; the moments
    // are zeros. Adam's square root and division make nothing exact, so exact mode draws the same.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const std::int64_t p = shard_size(c);
        fill_normal_slice(inputs[0], input_rng(c, info().id, 0, 0), rank * p);
        fill_normal_slice(inputs[1], input_rng(c, info().id, 0, 1), rank * p);
        fill_constant(inputs[2], 0.0);
        fill_constant(inputs[3], 0.0);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return {{"lr", 1e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"step", 1 + c.trial % 7}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double p = static_cast<double>(shard_size(c));
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = p * c.world_size * e,
                .flops = 12.0 * p,
                .memory_bytes = 4.0 * p * e + p * c.world_size * e};
    }
};

} // namespace

const Problem& problem_43() {
    static const FusedAdamAllGather problem;
    return problem;
}

} // namespace pkbw::problems
