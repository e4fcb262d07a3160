// PKB problem 1: sum a tensor across all ranks.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class AllReduce final : public BasicProblem {
public:
    AllReduce()
        : BasicProblem({.id = 1,
                        .stem = "1_allreduce",
                        .category = "CC",
                        .title = "All-reduce (sum)",
                        .description =
                            "Every rank holds an [M, N] tensor; every rank returns the element-wise "
                            "sum over all ranks. PKB's inputs are constants (rank r holds r+1), so "
                            "every element of the result is W(W+1)/2."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"tensor", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_rank_constant(c, info().id, rank, c.world_size, inputs[0]);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = bytes,
                .flops = mn(c) * (c.world_size - 1),
                .memory_bytes = 2 * bytes};
    }
};

} // namespace

const Problem& problem_1() {
    static const AllReduce problem;
    return problem;
}

} // namespace pkbw::problems
