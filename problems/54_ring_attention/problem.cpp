// PKB problem 54: causal ring attention over the world, K/V blocks passed around the ring and the
// block outputs merged with their log-sum-exp in fp32.
#include "attention_inputs.h"

namespace pkbw::problems {
namespace {

class RingAttention final : public BasicProblem {
public:
    RingAttention()
        : BasicProblem({.id = 54,
                        .stem = "54_ring_attention",
                        .category = "SCP",
                        .title = "Causal ring attention with fp32 log-sum-exp merges",
                        .description =
                            "Every rank holds q, k, v [B, S, 8, 64] (B = max(1, M/64), S = max(1, T/W), "
                            "T = max(1, N/64), standard normal): its sequence block. K/V travel the ring "
                            "(W-1 steps); rank r attends causally to blocks 0..r (its own block masked "
                            "above the diagonal), each block's softmax(q k^T / 8) v and log-sum-exp in "
                            "fp32, merged in PKB's sigmoid/logsigmoid form, rounded once to D. W must "
                            "divide 8. B and S vary with --m and --n."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        return check_attn_heads(c, info());
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Shape s = {attn_batch(c), attn_local_seq(c, c.world_size), kAttnHeads, kAttnHeadDim};
        return {{"q", c.dtype, s}, {"k", c.dtype, s}, {"v", c.dtype, s}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {
            {"output", c.dtype, {attn_batch(c), attn_local_seq(c, c.world_size), kAttnHeads, kAttnHeadDim}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, 2);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override { return {{"causal", 1}}; }
    WorkModel work(const ProblemConfig& c) const override {
        const double s = static_cast<double>(attn_local_seq(c, c.world_size));
        const double block = static_cast<double>(attn_batch(c)) * s * kAttnHidden;
        const double w = c.world_size;
        // K and V of every rank pass through each rank (an all-gather's traffic); on average (W+1)/2
        // blocks of 4·S·S·64 FLOPs per (b, head).
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = 2 * block * w * elem_bytes(c),
                .flops = 4 * block * s * (w + 1) / 2,
                .memory_bytes = 4 * block * elem_bytes(c)};
    }
};

} // namespace

const Problem& problem_54() {
    static const RingAttention problem;
    return problem;
}

} // namespace pkbw::problems
