// PKB problem 73: Megatron's vocab-parallel cross-entropy (forward).
#include "problem_util.h"
#include "shared_inputs.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kBatch = 8;
constexpr std::int64_t kSeq = 1024;
constexpr std::int64_t kVocab = 512;

class VocabParallelCrossEntropy final : public BasicProblem {
public:
    VocabParallelCrossEntropy()
        : BasicProblem({.id = 73,
                        .stem = "73_vocab_parallel_cross_entropy_loss",
                        .category = "TI",
                        .title = "Vocab-parallel cross-entropy",
                        .description =
                            "Rank r holds logits [8, 1024, 512/W] for vocabulary ids [r·512/W, "
                            "(r+1)·512/W) and the shared targets [8, 1024]. The row max is all-reduced "
                            "(MAX) and subtracted from the logits in place; the target's shifted logit "
                            "(zero on ranks that do not own it) and the sum of exp are all-reduced (SUM), "
                            "all in the dtype; every rank returns log(sum exp) - target logit [8, 1024]. "
                            "M and N are not used (PKB's sizes are fixed); W must divide 512.",
                        .mutates_inputs = true}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto error = check_common(c, info())) {
            return error;
        }
        return require_divides(info(), c.world_size, "W", kVocab, "the vocabulary size");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"vocab_parallel_logits", c.dtype, {kBatch, kSeq, kVocab / c.world_size}},
                {"target", DType::I64, {kBatch, kSeq}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {kBatch, kSeq}}};
    }
    // Logits: standard normal per rank (PKB seeds per rank). Targets: PKB's formula
    // (13 i + 7 + trial) mod 512 over the flat token index i, identical on every rank.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const CounterRng rng = input_rng(c, info().id, rank, 0);
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[0], rng, 8);
        } else {
            fill_normal(inputs[0], rng);
        }
        fill_slice(inputs[1], 0, [&](std::uint64_t i) {
            return static_cast<double>((static_cast<std::int64_t>(i) * 13 + 7 + c.trial) % kVocab);
        });
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double rows = static_cast<double>(kBatch * kSeq);
        const double e = elem_bytes(c);
        const double local = static_cast<double>(kVocab / c.world_size);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 3.0 * rows * e,
                .flops = 4.0 * rows * local,
                .memory_bytes = 2.0 * rows * local * e + rows * 8 + rows * e};
    }
};

} // namespace

const Problem& problem_73() {
    static const VocabParallelCrossEntropy problem;
    return problem;
}

} // namespace pkbw::problems
