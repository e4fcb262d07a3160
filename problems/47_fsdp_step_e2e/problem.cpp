// PKB problem 47: one FSDP training step of the tiny MLP (all-gather the flat parameters, backward,
// reduce-scatter the gradient, AdamW on the shard).
#include "mlp_inputs.h"

namespace pkbw::problems {
namespace {

class FsdpStep final : public BasicProblem {
public:
    FsdpStep()
        : BasicProblem(
              {.id = 47,
               .stem = "47_fsdp_step_e2e",
               .category = "TI",
               .title = "FSDP training step",
               .description =
                   "Rank r holds its rows of a shared batch, shard r [P/W] of the MLP's flat "
                   "parameters [W1, b1, W2, b2] and zero AdamW moment shards. The shards are "
                   "all-gathered, the MLP runs forward and backward on the MSE (mean) loss, the flat "
                   "gradient is reduce-scattered (sum) and divided by W, and one AdamW step (decoupled "
                   "weight decay 0.01 on the old shard) updates the shard. Returns (theta, exp_avg, "
                   "exp_avg_sq) [P/W]. PKB's input quirk is kept: every rank slices its own "
                   "parameters, which are zeros off rank 0, so only rank 0's shard is non-zero. List "
                   "param param_shapes = the four shapes flattened (hidden, d_in, hidden, d_out, "
                   "hidden, d_out)."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const MlpDims d = mlp_dims(c, true);
        const std::int64_t part = d.param_numel() / c.world_size;
        return {{"X_local", c.dtype, {d.rows, d.d_in}},
                {"y_local", c.dtype, {d.rows, d.d_out}},
                {"flat_param_shard", c.dtype, {part}},
                {"exp_avg_shard", c.dtype, {part}},
                {"exp_avg_sq_shard", c.dtype, {part}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const std::int64_t part = mlp_dims(c, true).param_numel() / c.world_size;
        return {{"output_0", c.dtype, {part}}, {"output_1", c.dtype, {part}}, {"output_2", c.dtype, {part}}};
    }
    // Rank 0's shard is the first P/W elements of its flat parameters (streams 2..5, as 40-42 draw
    // W1, b1, W2, b2); every other rank's is zeros (PKB's quirk).
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const MlpDims d = mlp_dims(c, true);
        fill_mlp_batch(c, info().id, rank, d, inputs[0], inputs[1]);
        if (rank == 0) {
            const std::int64_t ends[4] = {d.hidden * d.d_in, d.hidden * d.d_in + d.hidden,
                                          d.hidden * d.d_in + d.hidden + d.d_out * d.hidden, d.param_numel()};
            fill_slice(inputs[2], 0, [&](std::uint64_t i) {
                int k = 0;
                while (static_cast<std::int64_t>(i) >= ends[k]) {
                    ++k;
                }
                const std::int64_t start = k == 0 ? 0 : ends[k - 1];
                return input_rng(c, info().id, 0, 2 + k).normal(i - static_cast<std::uint64_t>(start));
            });
        } else {
            fill_constant(inputs[2], 0.0);
        }
        fill_constant(inputs[3], 0.0);
        fill_constant(inputs[4], 0.0);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        std::map<std::string, double> p = adam_params(c);
        p["weight_decay"] = 0.01;
        const MlpDims d = mlp_dims(c, true);
        add_list_param(p, "param_shapes",
                       {static_cast<double>(d.hidden), static_cast<double>(d.d_in),
                        static_cast<double>(d.hidden), static_cast<double>(d.d_out),
                        static_cast<double>(d.hidden), static_cast<double>(d.d_out)});
        return p;
    }
    WorkModel work(const ProblemConfig& c) const override {
        const MlpDims d = mlp_dims(c, true);
        const double e = elem_bytes(c), p = static_cast<double>(d.param_numel());
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = p * e,
                .flops = mlp_step_flops(d),
                .memory_bytes =
                    static_cast<double>(d.rows * (d.d_in + d.d_out)) * e + 6.0 * p / c.world_size * e};
    }
};

} // namespace

const Problem& problem_47() {
    static const FsdpStep problem;
    return problem;
}

} // namespace pkbw::problems
