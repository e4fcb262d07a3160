// PKB problem 56: two pipeline stages of a ring-attention block on a CP x PP grid; stage 0's output is
// sent to stage 1 by P2P and becomes its input.
#include "attention_inputs.h"

namespace pkbw::problems {
namespace {

// PKB's _build_cp_pp_groups(min(2, W)): CP groups are W/pp consecutive ranks (one stage), PP groups
// ranks W/pp apart.
struct CpPpGrid {
    int pp, cp;
    explicit CpPpGrid(const ProblemConfig& c)
        : pp(attn_pair_size(c.world_size))
        , cp(c.world_size / attn_pair_size(c.world_size)) {}
    int cp_rank(int rank) const { return rank % cp; }
    int pp_rank(int rank) const { return rank / cp; }
};

class RingAttentionPp final : public BasicProblem {
public:
    RingAttentionPp()
        : BasicProblem({.id = 56,
                        .stem = "56_ring_attention_pp",
                        .category = "SCP",
                        .title = "Two pipeline stages of ring attention: CP rings, stage output sent by P2P",
                        .description =
                            "W = cp x pp with pp = min(2, W); CP groups are cp consecutive ranks (a stage), "
                            "PP groups ranks cp apart. Rank r holds hidden [B, S, 512] (seeded by its CP "
                            "rank; B = max(1, M/64), S = max(1, T/cp), T = max(1, N/64)) and its stage's "
                            "w_qkv [1536, 512], w_o [512, 512] (normal x 0.02). Stage 0 computes the "
                            "attention block (QKV projection, causal ring attention over its CP group on 8 "
                            "heads of 64, output projection) on hidden and sends it to stage 1, which "
                            "applies its block to what it received (its own hidden is unused). Each rank "
                            "returns its stage's output. W must be 1 or even. B and S vary with --m, --n."}) {
    }

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        return require_pair_grid(info(), c.world_size);
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const CpPpGrid g(c);
        return {{"hidden_states", c.dtype, {attn_batch(c), attn_local_seq(c, g.cp), kAttnHidden}},
                {"w_qkv", c.dtype, {3 * kAttnHidden, kAttnHidden}},
                {"w_o", c.dtype, {kAttnHidden, kAttnHidden}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const CpPpGrid g(c);
        return {{"output", c.dtype, {attn_batch(c), attn_local_seq(c, g.cp), kAttnHidden}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const CpPpGrid g(c);
        // PKB seeds hidden by cp_rank and the weights by 20000 + pp_rank.
        fill_attn_input(c, info().id, g.cp_rank(rank), 0, inputs[0]);
        fill_attn_input(c, info().id, 20000 + g.pp_rank(rank), 1, inputs[1], 0.02);
        fill_attn_input(c, info().id, 20000 + g.pp_rank(rank), 2, inputs[2], 0.02);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const CpPpGrid g(c);
        return {{"num_heads", static_cast<double>(kAttnHeads)},
                {"causal", 1},
                {"pp_size", static_cast<double>(g.pp)},
                {"cp_size", static_cast<double>(g.cp)}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const CpPpGrid g(c);
        const double e = elem_bytes(c), rows = static_cast<double>(attn_batch(c) * attn_local_seq(c, g.cp));
        const double s = static_cast<double>(attn_local_seq(c, g.cp));
        return {.collective = CollectiveKind::None,
                .collective_bytes = rows * kAttnHidden * e,
                .flops =
                    2 * rows * kAttnHidden * 4 * kAttnHidden + 4 * rows * s * kAttnHidden * (g.cp + 1) / 2,
                .memory_bytes = (2 * rows * kAttnHidden + 4 * kAttnHidden * kAttnHidden) * e};
    }
};

} // namespace

const Problem& problem_56() {
    static const RingAttentionPp problem;
    return problem;
}

} // namespace pkbw::problems
