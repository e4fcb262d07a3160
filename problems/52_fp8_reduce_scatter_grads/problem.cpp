// PKB problem 52: FP8 (e4m3, delayed scaling) round trip of flat gradients, then a reduce-scatter
// in D divided by W; the updated amax history is returned too.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kHistory = 16;

// PKB's shard size: P = max(64, min(M*64, 4096)).
std::int64_t shard(const ProblemConfig& c) {
    return std::max<std::int64_t>(64, std::min<std::int64_t>(c.m * 64, 4096));
}

class Fp8ReduceScatterGrads final : public BasicProblem {
public:
    Fp8ReduceScatterGrads()
        : BasicProblem({.id = 52,
                        .stem = "52_fp8_reduce_scatter_grads",
                        .category = "TI",
                        .title = "FP8 round trip of gradients, reduce-scatter",
                        .description =
                            "Every rank holds flat_grads [W*P] (P = max(64, min(64M, 4096)), standard "
                            "normal) and amax_history [16] bf16 (1e-8). Its absmax is rolled into the "
                            "history, scale = max(history)/448, the grads go through e4m3 and back; "
                            "rank r returns (chunk r of the sum over ranks / W in D [P], the updated "
                            "history [16] bf16)."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"flat_grads", c.dtype, {c.world_size * shard(c)}},
                {"amax_history", DType::BF16, {kHistory}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output_0", c.dtype, {shard(c)}}, {"output_1", DType::BF16, {kHistory}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], input_rng(c, info().id, rank, 0), exact_amplitude(c.dtype, c.world_size));
        } else {
            fill_normal(inputs[0], input_rng(c, info().id, rank, 0));
        }
        fill_constant(inputs[1], 1e-8);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double in = static_cast<double>(c.world_size * shard(c)) * elem_bytes(c);
        return {.collective = CollectiveKind::ReduceScatter,
                .collective_bytes = in,
                .flops = 4.0 * static_cast<double>(c.world_size * shard(c)),
                .memory_bytes = 2 * in};
    }
};

} // namespace

const Problem& problem_52() {
    static const Fp8ReduceScatterGrads problem;
    return problem;
}

} // namespace pkbw::problems
