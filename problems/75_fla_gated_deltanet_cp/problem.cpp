// PKB problem 75: Gated DeltaNet under context parallelism: all-to-all from sequence to head shards,
// the scalar-decay gated delta-rule recurrence over the whole sequence, all-to-all back.
#include "attention_inputs.h"
#include "shared_inputs.h"

#include <algorithm>
#include <cmath>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kKeyDim = 256, kValueDim = 512;

// PKB: H = roundup(6, W) heads; 64 local tokens (pkbw: max(1, N/16), so 64 at the default N = 1024).
std::int64_t heads(const ProblemConfig& c) {
    return (6 + c.world_size - 1) / c.world_size * c.world_size;
}
std::int64_t local_seq(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, c.n / 16);
}

class GatedDeltaNetCp final : public BasicProblem {
public:
    GatedDeltaNetCp()
        : BasicProblem(
              {.id = 75,
               .stem = "75_fla_gated_deltanet_cp",
               .category = "SCP",
               .title = "Gated DeltaNet: all-to-all to head shards, delta-rule recurrence, all-to-all back",
               .description =
                   "H = roundup(6, W) heads. Every rank holds q, k [1, L, H, 256], v [1, L, H, 512], "
                   "gate [1, L, H] (standard normal), beta [1, L, H] (sigmoid of a bf16 normal) and "
                   "a_log, dt_bias [H/W] bf16 (its slices of linspace(0, 0.2, H) and linspace(-0.1, "
                   "0.1, H)); L = max(1, N/16) (PKB: 64, the default). Heads go to ranks by "
                   "all-to-all (rank r: heads r*H/W.., all W*L tokens); per head the fp32 state "
                   "S [256, 512] follows S = decay S, u = (v - k^T S) beta, S += k u^T, o = q^T S "
                   "with q, k L2-normalised (q / 16) and decay = exp(-exp(a_log) softplus(gate + "
                   "dt_bias)); o is rounded to D and sent back to sequence shards."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const std::int64_t l = local_seq(c), h = heads(c), lh = h / c.world_size;
        return {{"q", c.dtype, {1, l, h, kKeyDim}},   {"k", c.dtype, {1, l, h, kKeyDim}},
                {"v", c.dtype, {1, l, h, kValueDim}}, {"gate", c.dtype, {1, l, h}},
                {"beta", c.dtype, {1, l, h}},         {"a_log", DType::BF16, {lh}},
                {"dt_bias", DType::BF16, {lh}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {1, local_seq(c), heads(c), kValueDim}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        for (int t = 0; t < 4; ++t) {
            const CounterRng rng = input_rng(c, info().id, rank, t);
            if (c.input_mode == InputMode::Exact) {
                fill_exact(inputs[t], rng, 2);
            } else {
                fill_normal(inputs[t], rng);
            }
        }
        // beta = randn(bf16).sigmoid() (in bf16) then cast to D.
        const CounterRng beta_rng = input_rng(c, info().id, rank, 4);
        fill_slice(inputs[4], 0, [&](std::uint64_t i) {
            const double z = round_to_bf16(beta_rng.normal(i));
            return round_to_bf16(1.0 / (1.0 + std::exp(-z)));
        });
        const std::int64_t h = heads(c), lh = h / c.world_size;
        fill_slice(inputs[5], 0, [&](std::uint64_t i) {
            return torch_linspace(0.0, 0.2, h, rank * lh + static_cast<std::int64_t>(i));
        });
        fill_slice(inputs[6], 0, [&](std::uint64_t i) {
            return torch_linspace(-0.1, 0.1, h, rank * lh + static_cast<std::int64_t>(i));
        });
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double tokens = static_cast<double>(local_seq(c) * heads(c)), e = elem_bytes(c);
        const double steps = static_cast<double>(local_seq(c)) * c.world_size;
        const double local_heads = static_cast<double>(heads(c) / c.world_size);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = tokens * (2 * kKeyDim + 2 * kValueDim + 2) * e,
                .flops = 8.0 * steps * local_heads * kKeyDim * kValueDim,
                .memory_bytes = tokens * (2 * kKeyDim + 2 * kValueDim) * e};
    }

private:
    static double round_to_bf16(double v) {
        std::byte buf[2];
        f64_to_element(DType::BF16, v, buf);
        return element_to_f64(DType::BF16, buf);
    }
};

} // namespace

const Problem& problem_75() {
    static const GatedDeltaNetCp problem;
    return problem;
}

} // namespace pkbw::problems
