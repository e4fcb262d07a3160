// PKB problem 3: copy the source rank's tensor to every rank.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class Broadcast final : public BasicProblem {
public:
    Broadcast()
        : BasicProblem({.id = 3,
                        .stem = "3_broadcast",
                        .category = "CC",
                        .title = "Broadcast from rank 0",
                        .description = "Every rank holds an [M, N] tensor; every rank returns a copy of the "
                                       "source rank's tensor (param `src`, 0). PKB's inputs are constants "
                                       "(rank r holds r+1), so every output is all ones."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"tensor", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_rank_constant(c, info().id, rank, 1, inputs[0]);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override { return {{"src", 0}}; }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::Broadcast,
                .collective_bytes = bytes,
                .flops = 0,
                .memory_bytes = 2 * bytes};
    }
};

} // namespace

const Problem& problem_3() {
    static const Broadcast problem;
    return problem;
}

} // namespace pkbw::problems
