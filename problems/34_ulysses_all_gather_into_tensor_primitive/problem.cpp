// PKB problem 34: Ulysses' all_gather_into_tensor primitive, the shards stacked along dimension 0.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class UlyssesAllGatherIntoTensor final : public BasicProblem {
public:
    UlyssesAllGatherIntoTensor()
        : BasicProblem({.id = 34,
                        .stem = "34_ulysses_all_gather_into_tensor_primitive",
                        .category = "SCP",
                        .title = "Ulysses all-gather into one tensor along dimension 0",
                        .description = "Every rank holds x [M, N] (standard normal); every rank returns "
                                       "[W*M, N] whose rows r*M .. r*M+M-1 are rank r's x "
                                       "(all_gather_into_tensor; at W = 1 x itself)."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"x", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.world_size * c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, 1));
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double in = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = in * c.world_size,
                .flops = 0,
                .memory_bytes = in + in * c.world_size};
    }
};

} // namespace

const Problem& problem_34() {
    static const UlyssesAllGatherIntoTensor problem;
    return problem;
}

} // namespace pkbw::problems
