// PKB problem 7: sum across ranks; rank r keeps row block r.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class ReduceScatter final : public BasicProblem {
public:
    ReduceScatter()
        : BasicProblem({.id = 7,
                        .stem = "7_reducescatter",
                        .category = "CC",
                        .title = "Reduce-scatter (sum) by row blocks",
                        .description =
                            "Every rank holds a [W*M, N] tensor; rank r returns rows [r*M, (r+1)*M) "
                            "of the element-wise sum over all ranks, shape [M, N]. PKB's inputs are "
                            "constants (rank r holds r+1), so the result is W(W+1)/2."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"tensor", c.dtype, {c.world_size * c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_rank_constant(c, info().id, rank, c.world_size, inputs[0]);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::ReduceScatter,
                .collective_bytes = bytes * c.world_size,
                .flops = mn(c) * (c.world_size - 1),
                .memory_bytes = bytes * (c.world_size + 1)};
    }
};

} // namespace

const Problem& problem_7() {
    static const ReduceScatter problem;
    return problem;
}

} // namespace pkbw::problems
