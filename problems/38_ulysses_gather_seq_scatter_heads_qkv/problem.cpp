// PKB problem 38: Ulysses' gather-sequence / scatter-heads all-to-all on a packed QKV projection
// [B, T, 3*512]: the last dimension is viewed as [3, 512] and the 512 part is scattered.
#include "ulysses_all_to_all.h"

namespace pkbw::problems {
namespace {

class GatherSeqScatterHeadsQkv final : public UlyssesAllToAllProblem {
public:
    GatherSeqScatterHeadsQkv()
        : UlyssesAllToAllProblem(
              {.id = 38,
               .stem = "38_ulysses_gather_seq_scatter_heads_qkv",
               .category = "SCP",
               .title = "Ulysses all-to-all on packed QKV: scatter heads, gather the sequence",
               .description = "Every rank holds qkv_tensor [B, T, 1536] (B = max(1, M/64), "
                              "T = max(1, N/64), standard normal), viewed as [B, T, 3, 512]. Rank j "
                              "returns [B, W*T, 1536/W] = [B, W*T, 3, 512/W]: sequence block r holds "
                              "columns j*512/W .. of each third of rank r's tensor. W must divide 8."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"qkv_tensor", c.dtype, {attn_batch(c), attn_seq(c), 3 * kAttnHidden}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {
            {"output", c.dtype, {attn_batch(c), c.world_size * attn_seq(c), 3 * kAttnHidden / c.world_size}}};
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"seq_dim", 1}, {"restore_shape", 1}};
    }

protected:
    std::int64_t sent_elements(const ProblemConfig& c) const override {
        return attn_batch(c) * attn_seq(c) * 3 * kAttnHidden;
    }
};

} // namespace

const Problem& problem_38() {
    static const GatherSeqScatterHeadsQkv problem;
    return problem;
}

} // namespace pkbw::problems
