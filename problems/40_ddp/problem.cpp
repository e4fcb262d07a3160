// PKB problem 40: one data-parallel training step of a tiny MLP (broadcast, backward, gradient
// all-reduce, Adam).
#include "mlp_inputs.h"

namespace pkbw::problems {
namespace {

const char* const kParamNames[4] = {"W1", "b1", "W2", "b2"};

class Ddp final : public BasicProblem {
public:
    Ddp()
        : BasicProblem(
              {.id = 40,
               .stem = "40_ddp",
               .category = "TI",
               .title = "DDP training step",
               .description =
                   "Rank r holds its rows of a shared batch (X [n/W, d_in], y [n/W, d_out]), the MLP "
                   "parameters W1, b1, W2, b2 (random on rank 0, zeros elsewhere) and zero Adam "
                   "moments. Parameters and moments are broadcast from rank 0; the MLP "
                   "linear-relu-linear runs forward and backward on the MSE (mean) loss; the flat "
                   "gradient is all-reduced (sum) and divided by W; one Adam step follows. Every "
                   "rank returns (W1, b1, W2, b2, 4 first moments, 4 second moments). n = max(M, W) "
                   "rounded to W, d_in = clamp(N, 16, 256), hidden = clamp(N/2, 32, 512), d_out = "
                   "clamp(N/4, 8, 256); every op rounds to the dtype."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const MlpDims d = mlp_dims(c, false);
        std::vector<TensorSpec> specs = {{"X_local", c.dtype, {d.rows, d.d_in}},
                                         {"y_local", c.dtype, {d.rows, d.d_out}}};
        const std::vector<Shape> shapes = mlp_param_shapes(d);
        for (const char* prefix : {"", "exp_avg_", "exp_avg_sq_"}) {
            for (int k = 0; k < 4; ++k) {
                specs.push_back({std::string(prefix) + kParamNames[k], c.dtype, shapes[k]});
            }
        }
        return specs;
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const std::vector<Shape> shapes = mlp_param_shapes(mlp_dims(c, false));
        std::vector<TensorSpec> specs;
        for (int i = 0; i < 12; ++i) {
            specs.push_back({"output_" + std::to_string(i), c.dtype, shapes[i % 4]});
        }
        return specs;
    }
    // Exact mode draws the same: the MLP's GEMMs feed Adam's square roots, nothing stays exact.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const MlpDims d = mlp_dims(c, false);
        fill_mlp_batch(c, info().id, rank, d, inputs[0], inputs[1]);
        for (int k = 0; k < 4; ++k) {
            fill_mlp_param(c, info().id, rank, k, inputs[2 + k]);
            fill_constant(inputs[6 + k], 0.0);
            fill_constant(inputs[10 + k], 0.0);
        }
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override { return adam_params(c); }
    WorkModel work(const ProblemConfig& c) const override {
        const MlpDims d = mlp_dims(c, false);
        const double e = elem_bytes(c), p = static_cast<double>(d.param_numel());
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = p * e,
                .flops = mlp_step_flops(d),
                .memory_bytes = static_cast<double>(d.rows * (d.d_in + d.d_out)) * e + 6.0 * p * e};
    }
};

} // namespace

const Problem& problem_40() {
    static const Ddp problem;
    return problem;
}

} // namespace pkbw::problems
