// PKB problem 25: an importance-sampled policy-gradient loss over a 32000-word vocabulary. Logits
// h W^T, per-token cross entropy, the clamped log-ratio to the old log-probs, and global means over
// every rank's valid tokens (seven all-reduces: five sums, a min and a max).
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kVocab = 32000; // PKB's fixed vocab_size

class ImportanceSamplingLoss final : public BasicProblem {
public:
    ImportanceSamplingLoss()
        : BasicProblem({.id = 25,
                        .stem = "25_importance_sampling_loss",
                        .category = "TI",
                        .title = "Importance-sampling policy-gradient loss with global token means",
                        .description =
                            "Every rank holds hidden_states [M, N], the LM head weight [32000, N] (own "
                            "draw per rank), labels [M] in [0, 32000), old_logprobs and advantages "
                            "[M]. logits = h W^T, ce = cross entropy per token, delta = clamp(-ce - "
                            "old, +-20), ratio = exp(delta); PG and surrogate sums are divided by the "
                            "global valid-token count. Returns (loss [] f32, None, per-token logprobs "
                            "[M], per-token PG loss [M], metrics [5] f32 = ratio mean, min, max, k3, "
                            "entropy).",
                        .mutates_inputs = false}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"hidden_states", c.dtype, {c.m, c.n}},
                {"weight", c.dtype, {kVocab, c.n}},
                {"labels", DType::I64, {c.m}},
                {"old_logprobs", c.dtype, {c.m}},
                {"advantages", c.dtype, {c.m}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output_0", DType::F32, {}},
                {"output_2", c.dtype, {c.m}},
                {"output_3", c.dtype, {c.m}},
                {"output_4", DType::F32, {5}}};
    }
    std::map<std::string, std::string> output_values(const ProblemConfig&, int) const override {
        return {{"output_1", "null"}}; // PKB's second return value is None
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        for (int k : {0, 1, 3, 4}) {
            const CounterRng rng = input_rng(c, info().id, rank, k);
            if (c.input_mode == InputMode::Exact) {
                fill_exact(inputs[k], rng, 2);
            } else {
                fill_normal(inputs[k], rng);
            }
        }
        fill_integers(inputs[2], input_rng(c, info().id, rank, 2), 0, kVocab);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"ignore_index", -100.0}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 7 * 4,
                .flops = 2.0 * mn(c) * kVocab,
                .memory_bytes = (mn(c) + kVocab * static_cast<double>(c.n) + 4.0 * c.m) * e + 8.0 * c.m};
    }
};

} // namespace

const Problem& problem_25() {
    static const ImportanceSamplingLoss problem;
    return problem;
}

} // namespace pkbw::problems
