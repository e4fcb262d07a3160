// PKB problem 5: the source rank sends chunk i of its [W, M, N] tensor to rank i.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

constexpr int kSrc = 0;

class Scatter final : public BasicProblem {
public:
    Scatter()
        : BasicProblem({.id = 5,
                        .stem = "5_scatter",
                        .category = "CC",
                        .title = "Scatter from rank 0",
                        .description =
                            "The source rank (param `src`, 0) holds [W, M, N] and every other rank "
                            "an [M, N] tensor of zeros; rank i returns chunk i of the source's "
                            "tensor. PKB's source chunk i is the constant i+1, so rank r returns "
                            "r+1 everywhere."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int rank) const override {
        if (rank == kSrc) {
            return {{"tensor", c.dtype, {c.world_size, c.m, c.n}}};
        }
        return {{"tensor", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        if (rank != kSrc) {
            return; // zeros, in both modes: the quirk is part of the problem
        }
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], input_rng(c, info().id, rank, 0), exact_amplitude(c.dtype, 1));
            return;
        }
        const std::size_t chunk = static_cast<std::size_t>(c.m * c.n) * dtype_size(c.dtype);
        std::byte* data = inputs[0].mutable_data();
        for (int i = 0; i < c.world_size; ++i) {
            Tensor part = Tensor::zeros(c.dtype, {c.m, c.n});
            fill_constant(part, i + 1.0);
            std::copy(part.data(), part.data() + chunk, data + i * chunk);
        }
    }
    std::map<std::string, double> params(const ProblemConfig&) const override { return {{"src", kSrc}}; }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::Scatter,
                .collective_bytes = bytes * c.world_size,
                .flops = 0,
                .memory_bytes = 2 * bytes};
    }
};

} // namespace

const Problem& problem_5() {
    static const Scatter problem;
    return problem;
}

} // namespace pkbw::problems
