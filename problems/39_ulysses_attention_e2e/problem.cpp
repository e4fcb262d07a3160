// PKB problem 39: Ulysses attention end to end: QKV projection, all-to-all from sequence to head
// shards, PKB's "attention" (over the head axis), all-to-all back, output projection.
#include "attention_inputs.h"
#include "head_margin.h"

namespace pkbw::problems {
namespace {

constexpr std::uint64_t kRedrawStream = 16; // hidden's redraws: streams 16, 17, ... (0-2 are the inputs)

class UlyssesAttention final : public BasicProblem {
public:
    UlyssesAttention()
        : BasicProblem(
              {.id = 39,
               .stem = "39_ulysses_attention_e2e",
               .category = "SCP",
               .title = "Ulysses attention: QKV projection, all-to-all, head-axis attention, all-to-all",
               .description = "Every rank holds hidden [B, S, 512] (B = max(1, M/64), S = max(1, T/W), T = "
                              "max(1, N/64)) and its own w_qkv [1536, 512] and w_o [512, 512] (standard "
                              "normal). qkv = hidden w_qkv^T as 8 heads of 64; q and the stacked (k, v) go "
                              "from sequence to head shards by all-to-all ([B, W*S, 8/W, 64]); PKB's "
                              "attention then runs over the HEAD axis (softmax of q k^T / 8 between the 8/W "
                              "local heads of one token, in D), the result goes back to sequence shards and "
                              "through w_o. At W = 8 one local head makes the softmax 1 (the output is v "
                              "projected). W must divide 8. B and S vary with --m and --n."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        return check_attn_heads(c, info());
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"hidden_states", c.dtype, {attn_batch(c), attn_local_seq(c, c.world_size), kAttnHidden}},
                {"w_qkv", c.dtype, {3 * kAttnHidden, kAttnHidden}},
                {"w_o", c.dtype, {kAttnHidden, kAttnHidden}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {attn_batch(c), attn_local_seq(c, c.world_size), kAttnHidden}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, 2);
        if (c.input_mode == InputMode::Pkb) {
            // Tokens whose head-axis softmax rows have a near tie are drawn again (head_margin.h says why).
            redraw_near_ties(inputs[0], inputs[1], kAttnHeads, c.world_size, head_score_margin(c.dtype),
                             pkb_seed(c.seed, info().id, rank, c.trial), kRedrawStream);
        }
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"num_heads", static_cast<double>(kAttnHeads)}, {"causal", 0}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double rows = static_cast<double>(attn_batch(c) * attn_local_seq(c, c.world_size));
        const double e = elem_bytes(c), heads = static_cast<double>(kAttnHeads) / c.world_size;
        // q, k, v out and the context back; the two projections dominate the FLOPs.
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = 4 * rows * kAttnHidden * e,
                .flops =
                    2 * rows * kAttnHidden * 4 * kAttnHidden + 4 * rows * c.world_size * heads * heads * 64,
                .memory_bytes = (2 * rows * kAttnHidden + 4 * kAttnHidden * kAttnHidden) * e};
    }
};

} // namespace

const Problem& problem_39() {
    static const UlyssesAttention problem;
    return problem;
}

} // namespace pkbw::problems
