// PKB problem 9: LayerNorm weight and bias gradients, summed over data-parallel shards.
#include "problem_util.h"

#include <cmath>

namespace pkbw::problems {
namespace {

double round_to(DType dtype, double value) {
    std::byte buf[8];
    f64_to_element(dtype, value, buf);
    return element_to_f64(dtype, buf);
}

class LayerNormBackward final : public BasicProblem {
public:
    LayerNormBackward()
        : BasicProblem({.id = 9,
                        .stem = "9_layernorm_backward",
                        .category = "FCC",
                        .title = "LayerNorm backward: gamma/beta gradients all-reduced",
                        .description =
                            "Rank r holds X_hat [M, N] (normalised activations) and dY [M, N] (the "
                            "output gradient) for its batch shard. Every rank returns (d_gamma, "
                            "d_beta), each [N]: the column sums of dY * X_hat and of dY, summed "
                            "over ranks. Products and column sums are rounded to the dtype as "
                            "PKB's tensors are."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"X_hat", c.dtype, {c.m, c.n}}, {"dY", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output_0", c.dtype, {c.n}}, {"output_1", c.dtype, {c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
        if (c.input_mode == InputMode::Exact) {
            return; // small exact values; no normalisation
        }
        // PKB: X_hat = X / (||X||_row + 1e-5), each step in the dtype.
        Tensor& x = inputs[0];
        const std::size_t size = dtype_size(c.dtype);
        std::byte* data = x.mutable_data();
        for (std::int64_t i = 0; i < c.m; ++i) {
            double sq = 0;
            for (std::int64_t j = 0; j < c.n; ++j) {
                const double v = x.get_f64(i * c.n + j);
                sq += v * v;
            }
            const double den = round_to(c.dtype, round_to(c.dtype, std::sqrt(sq)) + 1e-5);
            for (std::int64_t j = 0; j < c.n; ++j) {
                const std::int64_t k = i * c.n + j;
                f64_to_element(c.dtype, x.get_f64(k) / den, data + k * size);
            }
        }
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 2.0 * static_cast<double>(c.n) * e,
                .flops = 3.0 * mn(c),
                .memory_bytes = 2.0 * mn(c) * e + 2.0 * static_cast<double>(c.n) * e};
    }
};

} // namespace

const Problem& problem_9() {
    static const LayerNormBackward problem;
    return problem;
}

} // namespace pkbw::problems
