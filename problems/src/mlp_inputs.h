// Shapes and inputs of PKB's tiny-MLP training steps (40 ddp, 41 zero1, 42 zero2, 47 fsdp): a data
// batch sliced per rank from one shared draw, and parameters drawn on rank 0 only (zeros on every
// other rank: the reference broadcasts or gathers them).
#pragma once

#include "problem_util.h"
#include "shared_inputs.h"

#include <algorithm>
#include <utility>

namespace pkbw::problems {

struct MlpDims {
    std::int64_t rows_total, rows, d_in, hidden, d_out;
    std::int64_t param_numel() const { return hidden * d_in + hidden + d_out * hidden + d_out; }
};

// PKB: rows = max(M, W) rounded up to a multiple of W, split evenly; d_in = clamp(N, 16, 256),
// hidden = clamp(N/2, 32, 512), d_out = clamp(N/4, 8, 256). With `divisible_by_world`, hidden is bumped
// until the flat parameter count divides by W (PKB's _ddp_mlp_shapes_divisible_by_dp, for ZeRO).
inline MlpDims mlp_dims(const ProblemConfig& c, bool divisible_by_world) {
    const std::int64_t w = c.world_size;
    MlpDims d{};
    d.rows_total = (std::max<std::int64_t>(c.m, w) + w - 1) / w * w;
    d.rows = d.rows_total / w;
    d.d_in = std::max<std::int64_t>(16, std::min<std::int64_t>(c.n, 256));
    d.hidden = std::max<std::int64_t>(32, std::min<std::int64_t>(c.n / 2, 512));
    d.d_out = std::max<std::int64_t>(8, std::min<std::int64_t>(c.n / 4, 256));
    if (divisible_by_world) {
        for (int i = 0; i < 1024 && d.param_numel() % w != 0; ++i) {
            ++d.hidden;
        }
    }
    return d;
}

inline std::vector<Shape> mlp_param_shapes(const MlpDims& d) {
    return {{d.hidden, d.d_in}, {d.hidden}, {d.d_out, d.hidden}, {d.d_out}};
}

// X_local (stream 0) and y_local (stream 1): rank r's rows of a shared standard-normal draw.
inline void fill_mlp_batch(const ProblemConfig& c, int problem_id, int rank, const MlpDims& d, Tensor& x,
                           Tensor& y) {
    fill_normal_slice(x, input_rng(c, problem_id, 0, 0), rank * d.rows * d.d_in);
    fill_normal_slice(y, input_rng(c, problem_id, 0, 1), rank * d.rows * d.d_out);
}

// Parameter k (W1, b1, W2, b2; stream 2 + k): standard normal on rank 0, zeros elsewhere.
inline void fill_mlp_param(const ProblemConfig& c, int problem_id, int rank, int k, Tensor& param) {
    if (rank == 0) {
        fill_normal(param, input_rng(c, problem_id, 0, 2 + k));
    } else {
        fill_constant(param, 0.0);
    }
}

// PKB's Adam arguments: lr 1e-3, betas 0.9 / 0.999, eps 1e-8, step 1 + trial mod 7.
inline std::map<std::string, double> adam_params(const ProblemConfig& c) {
    return {{"lr", 1e-3}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-8}, {"step", 1 + c.trial % 7}};
}

// One step's work: 2 forward and 4 backward GEMMs over the local rows (2·rows·(d_in·hidden +
// hidden·d_out) FLOPs each pair).
inline double mlp_step_flops(const MlpDims& d) {
    return 6.0 * static_cast<double>(d.rows) * static_cast<double>(d.d_in * d.hidden + d.hidden * d.d_out);
}

} // namespace pkbw::problems

namespace pkbw::problems {

// PKB 41 (ZeRO-1) and 42 (ZeRO-2): the MLP step with Adam on this rank's 1/W slice of the flat
// parameters. Inputs: X_local, y_local, W1, b1, W2, b2 (rank 0's broadcast), exp_avg_part and
// exp_avg_sq_part [P/W] (zeros); outputs: the four all-gathered parameters, then the slice's moments.
// The two differ in how the gradient is summed (41 all-reduces it, 42 reduce-scatters it), which the
// work model names.
class ZeroShardProblem final : public BasicProblem {
public:
    ZeroShardProblem(ProblemInfo info, CollectiveKind gradient_collective)
        : BasicProblem(std::move(info))
        , gradient_collective_(gradient_collective) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const MlpDims d = mlp_dims(c, true);
        const std::vector<Shape> shapes = mlp_param_shapes(d);
        const std::int64_t part = d.param_numel() / c.world_size;
        return {{"X_local", c.dtype, {d.rows, d.d_in}},
                {"y_local", c.dtype, {d.rows, d.d_out}},
                {"W1", c.dtype, shapes[0]},
                {"b1", c.dtype, shapes[1]},
                {"W2", c.dtype, shapes[2]},
                {"b2", c.dtype, shapes[3]},
                {"exp_avg_part", c.dtype, {part}},
                {"exp_avg_sq_part", c.dtype, {part}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const MlpDims d = mlp_dims(c, true);
        const std::vector<Shape> shapes = mlp_param_shapes(d);
        const std::int64_t part = d.param_numel() / c.world_size;
        std::vector<TensorSpec> specs;
        for (int k = 0; k < 4; ++k) {
            specs.push_back({"output_" + std::to_string(k), c.dtype, shapes[k]});
        }
        specs.push_back({"output_4", c.dtype, {part}});
        specs.push_back({"output_5", c.dtype, {part}});
        return specs;
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const MlpDims d = mlp_dims(c, true);
        fill_mlp_batch(c, info().id, rank, d, inputs[0], inputs[1]);
        for (int k = 0; k < 4; ++k) {
            fill_mlp_param(c, info().id, rank, k, inputs[2 + k]);
        }
        fill_constant(inputs[6], 0.0);
        fill_constant(inputs[7], 0.0);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override { return adam_params(c); }
    WorkModel work(const ProblemConfig& c) const override {
        const MlpDims d = mlp_dims(c, true);
        const double e = elem_bytes(c), p = static_cast<double>(d.param_numel());
        return {.collective = gradient_collective_,
                .collective_bytes = p * e,
                .flops = mlp_step_flops(d),
                .memory_bytes = static_cast<double>(d.rows * (d.d_in + d.d_out)) * e + 3.0 * p * e};
    }

private:
    CollectiveKind gradient_collective_;
};

} // namespace pkbw::problems
