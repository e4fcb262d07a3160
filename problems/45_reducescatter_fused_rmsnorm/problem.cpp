// PKB problem 45: reduce-scatter of a flat activation (in D), divided by W (in D), then an fp32
// RMSNorm of the [rows, hidden] shard times a gamma shared by every rank.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

// PKB's sizes: hidden = max(32, min(N, 128)); rows = max(2, max(M, W) // max(W, 4)).
std::int64_t hidden(const ProblemConfig& c) {
    return std::max<std::int64_t>(32, std::min<std::int64_t>(c.n, 128));
}
std::int64_t rows(const ProblemConfig& c) {
    const std::int64_t w = c.world_size;
    return std::max<std::int64_t>(2, std::max<std::int64_t>(c.m, w) / std::max<std::int64_t>(w, 4));
}

class ReduceScatterRmsNorm final : public BasicProblem {
public:
    ReduceScatterRmsNorm()
        : BasicProblem({.id = 45,
                        .stem = "45_reducescatter_fused_rmsnorm",
                        .category = "TI",
                        .title = "Reduce-scatter then RMSNorm",
                        .description =
                            "Every rank holds rs_input_1d [W*rows*hidden] (standard normal) and the "
                            "same gamma [hidden] (hidden = max(32, min(N, 128)), rows = max(2, "
                            "max(M, W) / max(W, 4))). Rank r returns [rows, hidden]: chunk r of the "
                            "sum over ranks (in D), divided by W (in D), RMS-normalised in fp32 "
                            "(eps 1e-5) and multiplied by gamma, cast to D."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"rs_input_1d", c.dtype, {c.world_size * rows(c) * hidden(c)}},
                {"gamma", c.dtype, {hidden(c)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {rows(c), hidden(c)}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        // gamma is drawn under rank 0's seed on every rank (PKB seeds with rank 0 first), so it is
        // the same everywhere; rs_input_1d under the rank's own seed.
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], input_rng(c, info().id, rank, 0), exact_amplitude(c.dtype, c.world_size));
            fill_exact(inputs[1], input_rng(c, info().id, 0, 1), 8);
        } else {
            fill_normal(inputs[0], input_rng(c, info().id, rank, 0));
            fill_normal(inputs[1], input_rng(c, info().id, 0, 1));
        }
    }
    std::map<std::string, double> params(const ProblemConfig&) const override { return {{"eps", 1e-5}}; }
    WorkModel work(const ProblemConfig& c) const override {
        const double shard = static_cast<double>(rows(c) * hidden(c));
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::ReduceScatter,
                .collective_bytes = shard * c.world_size * e,
                .flops = shard * (c.world_size + 5.0),
                .memory_bytes = shard * c.world_size * e + 2 * shard * e};
    }
};

} // namespace

const Problem& problem_45() {
    static const ReduceScatterRmsNorm problem;
    return problem;
}

} // namespace pkbw::problems
