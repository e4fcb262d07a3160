// PKB problem 37: Ulysses' gather-heads / scatter-sequence all-to-all on [B, T, 8, 64], the
// sequence zero-padded to a multiple of W first.
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
// The sequence chunk each rank receives: ceil(T / W) (the padded length over W).
std::int64_t seq_chunk(const ProblemConfig& c) {
    return (seq(c) + c.world_size - 1) / c.world_size;
}

class GatherHeadsScatterSeq final : public BasicProblem {
public:
    GatherHeadsScatterSeq()
        : BasicProblem({.id = 37,
                        .stem = "37_ulysses_gather_heads_scatter_seq",
                        .category = "SCP",
                        .title = "Ulysses all-to-all: scatter the sequence, gather heads",
                        .description =
                            "Every rank holds x [B, T, 8, 64] (B = max(1, M/64), T = max(1, N/64), "
                            "standard normal). The sequence is zero-padded to Tp, a multiple of W; "
                            "rank j returns [B, Tp/W, 8*W, 64] whose head block r is sequence "
                            "positions j*Tp/W .. of rank r's padded x. W must divide 8."}) {}

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
        return {{"output", c.dtype, {batch(c), seq_chunk(c), kHeads * c.world_size, kHeadDim}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, 1));
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"seq_dim", 1}, {"head_dim", 2}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double send =
            static_cast<double>(batch(c) * seq_chunk(c) * c.world_size * kHeads * kHeadDim) * elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = send,
                .flops = 0,
                .memory_bytes = 2 * send};
    }
};

} // namespace

const Problem& problem_37() {
    static const GatherHeadsScatterSeq problem;
    return problem;
}

} // namespace pkbw::problems
