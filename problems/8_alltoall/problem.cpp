// PKB problem 8: personalised exchange; chunk j of every rank goes to rank j.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

class AllToAll final : public BasicProblem {
public:
    AllToAll()
        : BasicProblem({.id = 8,
                        .stem = "8_alltoall",
                        .category = "CC",
                        .title = "All-to-all of equal chunks",
                        .description =
                            "Every rank holds [W, M, N]; rank j returns [W, M, N] whose chunk r is "
                            "chunk j of rank r's input. PKB's chunk d of rank r is the constant "
                            "10r+d, so rank j's output chunk r is 10r+j."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"tensor", c.dtype, {c.world_size, c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.world_size, c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], input_rng(c, info().id, rank, 0), exact_amplitude(c.dtype, 1));
            return;
        }
        const std::size_t chunk = static_cast<std::size_t>(c.m * c.n) * dtype_size(c.dtype);
        std::byte* data = inputs[0].mutable_data();
        for (int d = 0; d < c.world_size; ++d) {
            Tensor part = Tensor::zeros(c.dtype, {c.m, c.n});
            fill_constant(part, 10.0 * rank + d);
            std::copy(part.data(), part.data() + chunk, data + d * chunk);
        }
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = mn(c) * elem_bytes(c) * c.world_size;
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = bytes,
                .flops = 0,
                .memory_bytes = 2 * bytes};
    }
};

} // namespace

const Problem& problem_8() {
    static const AllToAll problem;
    return problem;
}

} // namespace pkbw::problems
