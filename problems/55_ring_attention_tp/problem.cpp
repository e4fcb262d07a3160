// PKB problem 55: an attention block with its heads split over TP pairs and its sequence over a CP
// ring: QKV projection, causal ring attention inside the CP group, output projection, TP all-reduce.
#include "attention_inputs.h"

namespace pkbw::problems {
namespace {

// PKB's _build_tp_cp_groups(min(2, W)): TP groups are tp consecutive ranks, CP groups ranks tp apart.
struct TpCpGrid {
    int tp, cp;
    explicit TpCpGrid(const ProblemConfig& c)
        : tp(attn_pair_size(c.world_size))
        , cp(c.world_size / attn_pair_size(c.world_size)) {}
    int tp_rank(int rank) const { return rank % tp; }
    int cp_rank(int rank) const { return rank / tp; }
    std::int64_t local_heads() const { return kAttnHeads / tp; }
};

class RingAttentionTp final : public BasicProblem {
public:
    RingAttentionTp()
        : BasicProblem({.id = 55,
                        .stem = "55_ring_attention_tp",
                        .category = "SCP",
                        .title = "Attention block on a TP x CP grid: ring attention in CP, all-reduce in TP",
                        .description =
                            "W = tp x cp with tp = min(2, W); TP groups are tp consecutive ranks, CP groups "
                            "ranks tp apart. Rank r holds hidden [B, S, 512] (its CP block, the same on "
                            "both ranks of a TP pair; B = max(1, M/64), S = max(1, T/cp), T = max(1, "
                            "N/64)) and its TP pair member's weights w_qkv [3*8/tp*64, 512] and w_o [512, "
                            "8/tp*64] (normal x 0.02). qkv = hidden w_qkv^T, causal ring attention over "
                            "the CP group on 8/tp heads of 64, y = context w_o^T, summed over the TP pair. "
                            "W must be 1 or even. B and S vary with --m and --n."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        return require_pair_grid(info(), c.world_size);
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const TpCpGrid g(c);
        const std::int64_t width = g.local_heads() * kAttnHeadDim;
        return {{"hidden_states", c.dtype, {attn_batch(c), attn_local_seq(c, g.cp), kAttnHidden}},
                {"w_qkv", c.dtype, {3 * width, kAttnHidden}},
                {"w_o", c.dtype, {kAttnHidden, width}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const TpCpGrid g(c);
        return {{"output", c.dtype, {attn_batch(c), attn_local_seq(c, g.cp), kAttnHidden}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const TpCpGrid g(c);
        // PKB seeds hidden by cp_rank and the weights by 10000 + tp_rank.
        fill_attn_input(c, info().id, g.cp_rank(rank), 0, inputs[0]);
        fill_attn_input(c, info().id, 10000 + g.tp_rank(rank), 1, inputs[1], 0.02);
        fill_attn_input(c, info().id, 10000 + g.tp_rank(rank), 2, inputs[2], 0.02);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const TpCpGrid g(c);
        return {{"num_heads", static_cast<double>(kAttnHeads)},
                {"causal", 1},
                {"tp_size", static_cast<double>(g.tp)},
                {"cp_size", static_cast<double>(g.cp)}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const TpCpGrid g(c);
        const double e = elem_bytes(c), rows = static_cast<double>(attn_batch(c) * attn_local_seq(c, g.cp));
        const double width = static_cast<double>(g.local_heads() * kAttnHeadDim);
        const double s = static_cast<double>(attn_local_seq(c, g.cp));
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = rows * kAttnHidden * e,
                .flops = 2 * rows * kAttnHidden * 4 * width + 4 * rows * s * width * (g.cp + 1) / 2,
                .memory_bytes = (2 * rows * kAttnHidden + 4 * width * kAttnHidden) * e};
    }
};

} // namespace

const Problem& problem_55() {
    static const RingAttentionTp problem;
    return problem;
}

} // namespace pkbw::problems
