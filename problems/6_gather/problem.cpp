// PKB problem 6: stack every rank's tensor on the destination rank.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr int kDst = 0;

class Gather final : public BasicProblem {
public:
    Gather()
        : BasicProblem({.id = 6,
                        .stem = "6_gather",
                        .category = "CC",
                        .title = "Gather onto rank 0",
                        .description =
                            "Every rank holds an [M, N] tensor. The destination rank (param `dst`, "
                            "0) returns [W, M, N] with rank r's tensor in slice r; every other rank "
                            "returns its own input (shape [M, N]), and those outputs are compared "
                            "too. PKB's inputs are constants (rank r holds r+1)."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"tensor", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int rank) const override {
        if (rank == kDst) {
            return {{"output", c.dtype, {c.world_size, c.m, c.n}}};
        }
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_rank_constant(c, info().id, rank, 1, inputs[0]);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override { return {{"dst", kDst}}; }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::Gather,
                .collective_bytes = bytes * c.world_size,
                .flops = 0,
                .memory_bytes = 2 * bytes};
    }
};

} // namespace

const Problem& problem_6() {
    static const Gather problem;
    return problem;
}

} // namespace pkbw::problems
