// PKB problem 37: Ulysses' gather-heads / scatter-sequence all-to-all on [B, T, 8, 64], the
// sequence zero-padded to a multiple of W first.
#include "ulysses_all_to_all.h"

namespace pkbw::problems {
namespace {

// The sequence chunk each rank receives: ceil(T / W) (the padded length over W).
std::int64_t seq_chunk(const ProblemConfig& c) {
    return (attn_seq(c) + c.world_size - 1) / c.world_size;
}

class GatherHeadsScatterSeq final : public UlyssesAllToAllProblem {
public:
    GatherHeadsScatterSeq()
        : UlyssesAllToAllProblem({.id = 37,
                                  .stem = "37_ulysses_gather_heads_scatter_seq",
                                  .category = "SCP",
                                  .title = "Ulysses all-to-all: scatter the sequence, gather heads",
                                  .description =
                                      "Every rank holds x [B, T, 8, 64] (B = max(1, M/64), T = max(1, N/64), "
                                      "standard normal). The sequence is zero-padded to Tp, a multiple of W; "
                                      "rank j returns [B, Tp/W, 8*W, 64] whose head block r is sequence "
                                      "positions j*Tp/W .. of rank r's padded x. W must divide 8."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"x", c.dtype, {attn_batch(c), attn_seq(c), kAttnHeads, kAttnHeadDim}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {attn_batch(c), seq_chunk(c), kAttnHeads * c.world_size, kAttnHeadDim}}};
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"seq_dim", 1}, {"head_dim", 2}};
    }

protected:
    std::int64_t sent_elements(const ProblemConfig& c) const override {
        return attn_batch(c) * seq_chunk(c) * c.world_size * kAttnHidden; // the padded input
    }
};

} // namespace

const Problem& problem_37() {
    static const GatherHeadsScatterSeq problem;
    return problem;
}

} // namespace pkbw::problems
