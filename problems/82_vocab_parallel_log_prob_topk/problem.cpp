// PKB problem 82: vocab-parallel target log-probs under a top-k / top-p filter.
#include "vocab_topk_inputs.h"

namespace pkbw::problems {
namespace {

namespace vt = vocab_topk;

class VocabParallelLogProbTopK final : public BasicProblem {
public:
    VocabParallelLogProbTopK()
        : BasicProblem({.id = 82,
                        .stem = "82_vocab_parallel_log_prob_topk",
                        .category = "TI",
                        .title = "Vocab-parallel log-probs with top-k/top-p",
                        .description =
                            "Rank r holds logits [b, s, 256/W] for vocabulary ids [r·256/W, (r+1)·256/W) "
                            "and the shared targets [b, s] (b = clamp(M/512, 1, 4), s = max(W, min(M/128, "
                            "32)) rounded up to a multiple of W). An all-to-all turns the logits token-"
                            "parallel (rank r gets full rows of tokens [r·bs/W, (r+1)·bs/W)); each row is "
                            "filtered (top_k = 10, then top_p = 0.9 over the sorted softmax in the dtype, "
                            "the rest -inf), log_softmax in fp32 gives the target's log-prob, and an "
                            "all-gather returns fp32 [b, s] on every rank. W must divide 256.",
                        .mutates_inputs = false}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        return vt::check(c, info());
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"vocab_parallel_logits", c.dtype, {vt::batch(c), vt::seq(c), vt::local_vocab(c)}},
                {"target", DType::I64, {vt::batch(c), vt::seq(c)}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", DType::F32, {vt::batch(c), vt::seq(c)}}};
    }
    // PKB's targets: (17 i + 3 + trial) mod 256.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        vt::fill_logits_and_targets(c, info().id, rank, 17, 3, inputs[0], inputs[1]);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        std::map<std::string, double> p;
        vt::add_filter_params(p);
        return p;
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double tokens = static_cast<double>(vt::batch(c) * vt::seq(c));
        const double e = elem_bytes(c);
        const double local_rows = tokens / c.world_size;
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = tokens * static_cast<double>(vt::local_vocab(c)) * e,
                .flops = local_rows * static_cast<double>(vt::kVocab) * 16,
                .memory_bytes = 2 * tokens * static_cast<double>(vt::local_vocab(c)) * e + tokens * 12};
    }
};

} // namespace

const Problem& problem_82() {
    static const VocabParallelLogProbTopK problem;
    return problem;
}

} // namespace pkbw::problems
