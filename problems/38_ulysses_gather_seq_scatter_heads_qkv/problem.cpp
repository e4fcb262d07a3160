// PKB problem 38: Ulysses' gather-sequence / scatter-heads all-to-all on a packed QKV projection
// [B, T, 3*512]: the last dimension is viewed as [3, 512] and the 512 part is scattered.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kHeads = 8;
constexpr std::int64_t kProj = 8 * 64; // heads * head_dim: one of the q, k, v thirds

// PKB's _common_attn_dims: B = max(1, M/64), T = max(1, N/64).
std::int64_t batch(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, c.m / 64);
}
std::int64_t seq(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, c.n / 64);
}

class GatherSeqScatterHeadsQkv final : public BasicProblem {
public:
    GatherSeqScatterHeadsQkv()
        : BasicProblem({.id = 38,
                        .stem = "38_ulysses_gather_seq_scatter_heads_qkv",
                        .category = "SCP",
                        .title = "Ulysses all-to-all on packed QKV: scatter heads, gather the sequence",
                        .description =
                            "Every rank holds qkv_tensor [B, T, 1536] (B = max(1, M/64), "
                            "T = max(1, N/64), standard normal), viewed as [B, T, 3, 512]. Rank j "
                            "returns [B, W*T, 1536/W] = [B, W*T, 3, 512/W]: sequence block r holds "
                            "columns j*512/W .. of each third of rank r's tensor. W must divide 8."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        return require_divides(info(), c.world_size, "W", kHeads, "the head count");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"qkv_tensor", c.dtype, {batch(c), seq(c), 3 * kProj}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {batch(c), c.world_size * seq(c), 3 * kProj / c.world_size}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, 1));
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"seq_dim", 1}, {"restore_shape", 1}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double in = static_cast<double>(batch(c) * seq(c) * 3 * kProj) * elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = in,
                .flops = 0,
                .memory_bytes = 2 * in};
    }
};

} // namespace

const Problem& problem_38() {
    static const GatherSeqScatterHeadsQkv problem;
    return problem;
}

} // namespace pkbw::problems
