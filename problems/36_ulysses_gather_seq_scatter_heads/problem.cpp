// PKB problem 36: Ulysses' gather-sequence / scatter-heads all-to-all on [B, T, 8, 64].
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kHeads = 8;
constexpr std::int64_t kHeadDim = 64;

// PKB's _common_attn_dims: B = max(1, M/64), T = max(1, N/64).
std::int64_t batch(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, c.m / 64);
}
std::int64_t seq(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, c.n / 64);
}

class GatherSeqScatterHeads final : public BasicProblem {
public:
    GatherSeqScatterHeads()
        : BasicProblem({.id = 36,
                        .stem = "36_ulysses_gather_seq_scatter_heads",
                        .category = "SCP",
                        .title = "Ulysses all-to-all: scatter heads, gather the sequence",
                        .description =
                            "Every rank holds x [B, T, 8, 64] (B = max(1, M/64), T = max(1, N/64), "
                            "standard normal); rank j returns [B, W*T, 8/W, 64] whose sequence "
                            "block r is heads j*8/W .. of rank r's x. W must divide 8."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        return require_divides(info(), c.world_size, "W", kHeads, "the head count");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"x", c.dtype, {batch(c), seq(c), kHeads, kHeadDim}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {batch(c), c.world_size * seq(c), kHeads / c.world_size, kHeadDim}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, 1));
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"seq_dim", 1}, {"head_dim", 2}, {"unpadded_dim_size", 0}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double in = static_cast<double>(batch(c) * seq(c) * kHeads * kHeadDim) * elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = in,
                .flops = 0,
                .memory_bytes = 2 * in};
    }
};

} // namespace

const Problem& problem_36() {
    static const GatherSeqScatterHeads problem;
    return problem;
}

} // namespace pkbw::problems
