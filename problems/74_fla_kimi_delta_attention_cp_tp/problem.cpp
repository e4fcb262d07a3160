// PKB problem 74: Kimi delta attention (per-key-dim decay) with the sequence all-gathered over CP, the
// recurrence over the whole sequence on every rank, a TP all-reduce of the pair's outputs, and the
// rank's own sequence slice returned.
#include "attention_inputs.h"
#include "shared_inputs.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kHeads = 16, kKeyDim = 128, kValueDim = 128;

// PKB: W >= 4 and even: tp = 2 (TP pairs of consecutive ranks, CP groups ranks 2 apart); else CP =
// the world and no TP. 64 local tokens (pkbw: max(1, N/16), so 64 at the default N = 1024).
int tp_size(const ProblemConfig& c) {
    return c.world_size >= 4 && c.world_size % 2 == 0 ? 2 : 1;
}
std::int64_t local_seq(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, c.n / 16);
}

class KimiDeltaAttention final : public BasicProblem {
public:
    KimiDeltaAttention()
        : BasicProblem(
              {.id = 74,
               .stem = "74_fla_kimi_delta_attention_cp_tp",
               .category = "SCP",
               .title = "Kimi delta attention: CP all-gather, per-key-dim decay recurrence, TP all-reduce",
               .description =
                   "W >= 4 and even: TP pairs of consecutive ranks and CP groups of ranks 2 apart; "
                   "otherwise CP is the world and there is no TP. Every rank holds q, k, v, g [1, L, "
                   "16, 128] and beta [1, L, 16] (standard normal; L = max(1, N/16), PKB: 64), "
                   "a_log [16] and dt_bias [2048] (bf16 linspace(-0.1, 0.1)). The sequence is "
                   "all-gathered over CP; per head the fp32 state S [128, 128] follows S = diag(d) S, "
                   "u = (v - k^T S) sigmoid(beta), S += k u^T, o = q^T S with q, k L2-normalised (q "
                   "/ sqrt(128)) and d = exp(-5 sigmoid(exp(a_log) (g + dt_bias))); o in D is summed "
                   "over the TP pair and the rank's CP slice returned."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const std::int64_t l = local_seq(c);
        return {{"q", c.dtype, {1, l, kHeads, kKeyDim}},     {"k", c.dtype, {1, l, kHeads, kKeyDim}},
                {"v", c.dtype, {1, l, kHeads, kValueDim}},   {"g", c.dtype, {1, l, kHeads, kKeyDim}},
                {"beta", c.dtype, {1, l, kHeads}},           {"a_log", DType::BF16, {kHeads}},
                {"dt_bias", DType::BF16, {kHeads * kKeyDim}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {1, local_seq(c), kHeads, kValueDim}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        for (int t = 0; t < 5; ++t) {
            fill_attn_input(c, info().id, rank, t, inputs[t]);
        }
        fill_slice(inputs[5], 0, [](std::uint64_t i) {
            return torch_linspace(-0.1, 0.1, kHeads, static_cast<std::int64_t>(i));
        });
        fill_slice(inputs[6], 0, [](std::uint64_t i) {
            return torch_linspace(-0.1, 0.1, kHeads * kKeyDim, static_cast<std::int64_t>(i));
        });
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return {{"tp_size", static_cast<double>(tp_size(c))},
                {"cp_size", static_cast<double>(c.world_size / tp_size(c))}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const int cp = c.world_size / tp_size(c);
        const double l = static_cast<double>(local_seq(c)), e = elem_bytes(c);
        const double row = kHeads * (3.0 * kKeyDim + kValueDim + 1);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = cp * l * row * e,
                .flops = 8.0 * cp * l * kHeads * kKeyDim * kValueDim,
                .memory_bytes = (l * row + l * kHeads * kValueDim) * e};
    }
};

} // namespace

const Problem& problem_74() {
    static const KimiDeltaAttention problem;
    return problem;
}

} // namespace pkbw::problems
