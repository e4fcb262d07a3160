// PKB problem 84: the backward of problem 83 (gradient of the target log-probs w.r.t. the vocab-parallel
// logits), chunk by chunk.
#include "vocab_topk_inputs.h"

namespace pkbw::problems {
namespace {

namespace vt = vocab_topk;

class VocabParallelLogProbTopKChunkedBackward final : public BasicProblem {
public:
    VocabParallelLogProbTopKChunkedBackward()
        : BasicProblem({.id = 84,
                        .stem = "84_vocab_parallel_log_prob_topk_chunked_backward",
                        .category = "TI",
                        .title = "Chunked vocab-parallel log-prob backward with top-k/top-p",
                        .description =
                            "Rank r holds logits [b, s, 256/W] for its vocabulary slice, the shared targets "
                            "[b, s] and the shared bf16 grad_output [b, s] (linspace(-1, 1)). Per chunk of "
                            "b·chunk_size flat tokens: all-to-all to token-parallel rows, the top_k = 10 / "
                            "top_p = 0.9 filter in the dtype with its keep mask, grad = (onehot(target) - "
                            "softmax(filtered.float())) · grad_output · keep in fp32, all-to-all back. "
                            "Returns fp32 [b, s, 256/W], this rank's vocabulary slice. W must divide 256.",
                        .mutates_inputs = false}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        return vt::check(c, info());
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        std::vector<TensorSpec> specs = vt::logits_and_target_specs(c);
        specs.push_back({"grad_output", DType::BF16, {vt::batch(c), vt::seq(c)}});
        return specs;
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", DType::F32, {vt::batch(c), vt::seq(c), vt::local_vocab(c)}}};
    }
    // PKB's targets (19 i + 5 + trial) mod 256; grad_output = torch.linspace(-1, 1, b·s) in bf16 (the
    // first half start + i·step, the second end - (steps-1-i)·step, as torch's kernel), whatever the dtype.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        vt::fill_logits_and_targets(c, info().id, rank, 19, 5, inputs[0], inputs[1]);
        const std::int64_t steps = vt::batch(c) * vt::seq(c);
        const double step = steps > 1 ? 2.0 / static_cast<double>(steps - 1) : 0.0;
        fill_slice(inputs[2], 0, [&](std::uint64_t i) {
            const auto k = static_cast<std::int64_t>(i);
            return k < steps / 2 ? -1.0 + step * static_cast<double>(k)
                                 : 1.0 - step * static_cast<double>(steps - 1 - k);
        });
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return vt::filter_params(c, true);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double tokens = static_cast<double>(vt::batch(c) * vt::seq(c));
        const double lv = static_cast<double>(vt::local_vocab(c));
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = tokens * lv * (e + 4),
                .flops = tokens / c.world_size * static_cast<double>(vt::kVocab) * 20,
                .memory_bytes = tokens * lv * (e + 4) * 2 + tokens * 10};
    }
};

} // namespace

const Problem& problem_84() {
    static const VocabParallelLogProbTopKChunkedBackward problem;
    return problem;
}

} // namespace pkbw::problems
