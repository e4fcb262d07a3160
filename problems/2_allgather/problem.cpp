// PKB problem 2: stack every rank's tensor on every rank.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class AllGather final : public BasicProblem {
public:
    AllGather()
        : BasicProblem({.id = 2,
                        .stem = "2_allgather",
                        .category = "CC",
                        .title = "All-gather into a stacked tensor",
                        .description =
                            "Every rank holds an [M, N] tensor; every rank returns [W, M, N] whose "
                            "slice r is rank r's tensor. PKB's inputs are constants (rank r holds "
                            "r+1)."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"tensor", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.world_size, c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_rank_constant(c, info().id, rank, 1, inputs[0]);
    }
    WorkModel work(const ProblemConfig& c) const override { return all_gather_work(c); }
};

} // namespace

const Problem& problem_2() {
    static const AllGather problem;
    return problem;
}

} // namespace pkbw::problems
