// PKB problem 4: sum onto the destination rank; the other ranks return their input unchanged.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class Reduce final : public BasicProblem {
public:
    Reduce()
        : BasicProblem({.id = 4,
                        .stem = "4_reduce",
                        .category = "CC",
                        .title = "Reduce (sum) onto rank 0",
                        .description =
                            "Every rank holds an [M, N] tensor. The destination rank (param `dst`, "
                            "0) returns the element-wise sum over all ranks; every other rank "
                            "returns its own input unchanged (PKB reduces a clone in place and "
                            "NCCL leaves non-root buffers alone), and those outputs are compared "
                            "too. PKB's inputs are constants (rank r holds r+1)."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"tensor", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_rank_constant(c, info().id, rank, c.world_size, inputs[0]);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override { return {{"dst", 0}}; }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::Reduce,
                .collective_bytes = bytes,
                .flops = mn(c) * (c.world_size - 1) / c.world_size,
                .memory_bytes = 2 * bytes};
    }
};

} // namespace

const Problem& problem_4() {
    static const Reduce problem;
    return problem;
}

} // namespace pkbw::problems
