// PKB problem 36: Ulysses' gather-sequence / scatter-heads all-to-all on [B, T, 8, 64].
#include "ulysses_all_to_all.h"

namespace pkbw::problems {
namespace {

class GatherSeqScatterHeads final : public UlyssesAllToAllProblem {
public:
    GatherSeqScatterHeads()
        : UlyssesAllToAllProblem({.id = 36,
                                  .stem = "36_ulysses_gather_seq_scatter_heads",
                                  .category = "SCP",
                                  .title = "Ulysses all-to-all: scatter heads, gather the sequence",
                                  .description =
                                      "Every rank holds x [B, T, 8, 64] (B = max(1, M/64), T = max(1, N/64), "
                                      "standard normal); rank j returns [B, W*T, 8/W, 64] whose sequence "
                                      "block r is heads j*8/W .. of rank r's x. W must divide 8."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"x", c.dtype, {attn_batch(c), attn_seq(c), kAttnHeads, kAttnHeadDim}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output",
                 c.dtype,
                 {attn_batch(c), c.world_size * attn_seq(c), kAttnHeads / c.world_size, kAttnHeadDim}}};
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"seq_dim", 1}, {"head_dim", 2}, {"unpadded_dim_size", 0}};
    }

protected:
    std::int64_t sent_elements(const ProblemConfig& c) const override {
        return attn_batch(c) * attn_seq(c) * kAttnHidden;
    }
};

} // namespace

const Problem& problem_36() {
    static const GatherSeqScatterHeads problem;
    return problem;
}

} // namespace pkbw::problems
