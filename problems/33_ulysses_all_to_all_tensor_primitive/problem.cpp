// PKB problem 33: Ulysses' list all-to-all primitive: split dimension 0 into W chunks, send chunk j
// to rank j, concatenate what arrives along dimension 1.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class UlyssesAllToAllTensor final : public BasicProblem {
public:
    UlyssesAllToAllTensor()
        : BasicProblem({.id = 33,
                        .stem = "33_ulysses_all_to_all_tensor_primitive",
                        .category = "SCP",
                        .title = "Ulysses all-to-all: scatter dimension 0, gather dimension 1",
                        .description =
                            "Every rank holds x [M, N] (standard normal); rank j returns "
                            "[M/W, W*N] whose columns r*N .. r*N+N-1 are rows j*M/W .. of rank r's "
                            "x (tensor_split on dim 0, list all_to_all, cat on dim 1; PKB's "
                            "scatter_dim 0, gather_dim 1). W must divide M."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        // tensor_split gives unequal chunks otherwise, and PKB's empty_like(input_list[0]) receive
        // buffers then do not match what the peers send.
        return require_divides(info(), c.world_size, "W", c.m, "M");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"x", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m / c.world_size, c.world_size * c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, 1));
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"scatter_dim", 0}, {"gather_dim", 1}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double in = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = in,
                .flops = 0,
                .memory_bytes = 2 * in};
    }
};

} // namespace

const Problem& problem_33() {
    static const UlyssesAllToAllTensor problem;
    return problem;
}

} // namespace pkbw::problems
