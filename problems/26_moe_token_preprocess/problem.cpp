// PKB problem 26: MoE token preprocessing for expert parallelism (Megatron's token dispatcher
// bookkeeping): tokens per expert from a one-hot routing mask, the all-to-all split sizes to and from
// every rank, and the gathered counts of this rank's local experts.
#include "pkbw/toolkit/moe_inputs.h"
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

namespace tk = pkbw::tk;

constexpr std::int64_t kExperts = 8; // PKB's num_experts
constexpr std::int64_t kTopK = 2;

class MoeTokenPreprocess final : public BasicProblem {
public:
    MoeTokenPreprocess()
        : BasicProblem({.id = 26,
                        .stem = "26_moe_token_preprocess",
                        .category = "MoE",
                        .title = "MoE token preprocessing: split sizes and per-expert counts",
                        .description =
                            "Every rank holds expert_mask [8, 2, M] fp32 (one-hot of two experts drawn "
                            "uniformly per token, repeats allowed; fp32 whatever the dtype). counts[e] = "
                            "tokens routed to expert e; experts are dealt to ranks in blocks of 8/W. "
                            "Returns (input_splits [W] int64: counts summed per destination rank, "
                            "output_splits [W] int64: what each rank sends here, per_local_expert [W, "
                            "8/W] fp32: every rank's counts of this rank's experts, sum_per_local_expert "
                            "[8/W] fp32: their sum over ranks). W must divide 8.",
                        .mutates_inputs = false}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto error = check_common(c, info())) {
            return error;
        }
        return require_divides(info(), c.world_size, "W", kExperts, "num_experts");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"expert_mask", DType::F32, {kExperts, kTopK, c.m}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const std::int64_t w = c.world_size, local = kExperts / c.world_size;
        return {{"output_0", DType::I64, {w}},
                {"output_1", DType::I64, {w}},
                {"output_2", DType::F32, {w, local}},
                {"output_3", DType::F32, {local}}};
    }
    // PKB: one_hot(randint(0, 8, (M, 2)), 8).float().permute(2, 1, 0), so mask[e, k, t] = 1 when the
    // k-th draw of token t is e (the toolkit's random_expert_choices and one_hot_expert_mask). Both
    // draws of a token may be the same expert. The same in exact mode (the values are 0 and 1 already).
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const std::vector<long long> choices =
            tk::random_expert_choices(input_rng(c, info().id, rank, 0), c.m, kTopK, kExperts);
        const std::vector<double> mask = tk::one_hot_expert_mask(choices, c.m, kTopK, kExperts);
        float* out = reinterpret_cast<float*>(inputs[0].mutable_data());
        std::copy(mask.begin(), mask.end(), out);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"num_experts", static_cast<double>(kExperts)}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double w = c.world_size;
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = w * kExperts * 4,
                .flops = static_cast<double>(kExperts * kTopK * c.m),
                .memory_bytes = 4.0 * kExperts * kTopK * c.m + 16 * w + 8.0 * kExperts};
    }
};

} // namespace

const Problem& problem_26() {
    static const MoeTokenPreprocess problem;
    return problem;
}

} // namespace pkbw::problems
