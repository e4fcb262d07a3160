// PKB problem 15: gather hidden-sharded x, a SiLU MLP on this rank's row block, reduce-scatter.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kF = 512;

struct Dims {
    std::int64_t rows, hidden, hidden_local, rows_local;
};

Dims dims(const ProblemConfig& c) {
    const std::int64_t w = c.world_size;
    const std::int64_t rows = (c.m + w - 1) / w * w;
    const std::int64_t hidden = (256 + w - 1) / w * w;
    return {rows, hidden, hidden / w, rows / w};
}

class CombinedShardedGemms final : public BasicProblem {
public:
    CombinedShardedGemms()
        : BasicProblem({.id = 15,
                        .stem = "15_combined_sharded_gemms",
                        .category = "FCC",
                        .title = "All-gather, SiLU MLP on the local row block, reduce-scatter",
                        .description =
                            "Rank r holds x_local [Mr, H/W] (its hidden columns; Mr = M rounded up "
                            "to a multiple of W, H = 256 rounded up likewise), W1 [H, 512] and W2 "
                            "[512, H] (random per rank). It gathers x [Mr, H], computes "
                            "a = silu(x W1), takes row block r of a, multiplies by W2 and places "
                            "the block in an otherwise zero [Mr, H] buffer that is reduce-scattered. "
                            "Every other rank contributes zeros to block r, so rank r returns "
                            "silu(x[rows r] W1_r) W2_r, shape [Mr/W, H]."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Dims d = dims(c);
        return {{"x_local", c.dtype, {d.rows, d.hidden_local}},
                {"W1", c.dtype, {d.hidden, kF}},
                {"W2", c.dtype, {kF, d.hidden}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const Dims d = dims(c);
        return {{"output", c.dtype, {d.rows_local, d.hidden}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const Dims d = dims(c);
        const double e = elem_bytes(c);
        // PKB's reference runs the first GEMM on every row and the second on the local block.
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = static_cast<double>(d.rows * d.hidden) * e,
                .flops = 2.0 * d.rows * d.hidden * kF + 2.0 * d.rows_local * kF * d.hidden,
                .memory_bytes = static_cast<double>(d.rows * d.hidden_local + 2 * d.hidden * kF) * e +
                                static_cast<double>(d.rows_local * d.hidden) * e};
    }
};

} // namespace

const Problem& problem_15() {
    static const CombinedShardedGemms problem;
    return problem;
}

} // namespace pkbw::problems
