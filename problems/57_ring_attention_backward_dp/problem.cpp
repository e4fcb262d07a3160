// PKB problem 57: ring-attention backward on a CP x DP grid: dQ accumulated locally, dK/dV travelling
// a second ring, then averaged over the DP pair.
#include "attention_inputs.h"
#include "pkbw/toolkit/attention_host.h"

#include <cmath>

namespace pkbw::problems {
namespace {

// PKB's _build_cp_dp_groups(min(2, W)): CP groups are W/dp consecutive ranks, DP groups ranks W/dp apart.
struct CpDpGrid {
    int dp, cp;
    explicit CpDpGrid(const ProblemConfig& c)
        : dp(attn_pair_size(c.world_size))
        , cp(c.world_size / attn_pair_size(c.world_size)) {}
    int cp_rank(int rank) const { return rank % cp; }
    int dp_rank(int rank) const { return rank / cp; }
};

class RingAttentionBackwardDp final : public BasicProblem {
public:
    RingAttentionBackwardDp()
        : BasicProblem({.id = 57,
                        .stem = "57_ring_attention_backward_dp",
                        .category = "SCP",
                        .title = "Ring attention backward on a CP x DP grid, gradients averaged over DP",
                        .description =
                            "W = cp x dp with dp = min(2, W); CP groups are cp consecutive ranks, DP groups "
                            "ranks cp apart. Rank r holds dout, q, k, v [B, S, 8, 64] (B = max(1, M/64), "
                            "S = max(1, T/cp), T = max(1, N/64), standard normal), out [B, S, 8, 64] in D "
                            "and softmax_lse [B, 8, S] fp32 of the attention of its LOCAL block only. The "
                            "non-causal ring backward (p = exp(q k^T / 8 - lse), dS = p (dout v^T - "
                            "rowsum(dout * out))) gives dq = dS k / 8 over every key block, dk = dS^T q / 8 "
                            "and dv = p^T dout summed over every query block as they travel the ring; each "
                            "rounded to D, then all-reduced over the DP pair and divided by dp. W must "
                            "divide 8. B and S vary with --m and --n."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        return check_attn_heads(c, info());
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const CpDpGrid g(c);
        const std::int64_t b = attn_batch(c), s = attn_local_seq(c, g.cp);
        const Shape x = {b, s, kAttnHeads, kAttnHeadDim};
        return {{"dout", c.dtype, x}, {"q", c.dtype, x},   {"k", c.dtype, x},
                {"v", c.dtype, x},    {"out", c.dtype, x}, {"softmax_lse", DType::F32, {b, kAttnHeads, s}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const CpDpGrid g(c);
        const Shape x = {attn_batch(c), attn_local_seq(c, g.cp), kAttnHeads, kAttnHeadDim};
        return {{"output_0", c.dtype, x}, {"output_1", c.dtype, x}, {"output_2", c.dtype, x}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const CpDpGrid g(c);
        const int position = g.dp_rank(rank) * 100 + g.cp_rank(rank); // PKB's seed offset
        for (int t = 0; t < 4; ++t) {
            fill_attn_input(c, info().id, position, t, inputs[t]);
        }
        // out and lse: softmax(q k^T / 8) v and its log-sum-exp over the local block (PKB's quirk),
        // from the dtype-rounded q, k, v; out rounded to D, lse to fp32.
        auto values = [](const Tensor& t) {
            std::vector<double> v(static_cast<std::size_t>(t.numel()));
            for (std::int64_t i = 0; i < t.numel(); ++i)
                v[static_cast<std::size_t>(i)] = t.get_f64(i);
            return v;
        };
        const std::vector<double> q = values(inputs[1]), k = values(inputs[2]), v = values(inputs[3]);
        const Shape& s = inputs[1].shape();
        const tk::AttnShape sh = tk::bshd_shape(s[0], s[1], s[2], s[3], 1.0f / std::sqrt(float(s[3])), false);
        const tk::AttnView view = tk::bshd_view(s[1], s[2], s[3]);
        std::vector<double> out(q.size()), lse(static_cast<std::size_t>(inputs[5].numel()));
        tk::attention_f64(sh, {q, k, v, view, view, view}, out, view, &lse);
        fill_values(inputs[4], out);
        fill_values(inputs[5], lse);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const CpDpGrid g(c);
        return {
            {"causal", 0}, {"dp_size", static_cast<double>(g.dp)}, {"cp_size", static_cast<double>(g.cp)}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const CpDpGrid g(c);
        const double s = static_cast<double>(attn_local_seq(c, g.cp));
        const double block = static_cast<double>(attn_batch(c)) * s * kAttnHidden, e = elem_bytes(c);
        // K/V and fp32 dK/dV travel the ring; the DP all-reduce moves three gradients.
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 3 * block * e,
                .flops = 10 * block * s * g.cp,
                .memory_bytes = 8 * block * e};
    }
};

} // namespace

const Problem& problem_57() {
    static const RingAttentionBackwardDp problem;
    return problem;
}

} // namespace pkbw::problems
