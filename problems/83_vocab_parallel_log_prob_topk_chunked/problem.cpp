// PKB problem 83: problem 82 processed in chunks of b·chunk_size tokens.
#include "vocab_topk_inputs.h"

namespace pkbw::problems {
namespace {

namespace vt = vocab_topk;

class VocabParallelLogProbTopKChunked final : public BasicProblem {
public:
    VocabParallelLogProbTopKChunked()
        : BasicProblem({.id = 83,
                        .stem = "83_vocab_parallel_log_prob_topk_chunked",
                        .category = "TI",
                        .title = "Chunked vocab-parallel log-probs with top-k/top-p",
                        .description =
                            "Problem 82 (vocab-parallel logits [b, s, 256/W] and shared targets [b, s]; "
                            "all-to-all to token-parallel rows, top_k = 10 / top_p = 0.9 filter in the "
                            "dtype, fp32 target log-prob, all-gather) run chunk by chunk over the flat "
                            "tokens: chunks of b·chunk_size tokens, chunk_size = min(s, max(W, s/4) rounded "
                            "up to a multiple of W), each with its own all-to-all and all-gather; the "
                            "result is fp32 [b, s]. W must divide 256.",
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
    // PKB's targets: (19 i + 5 + trial) mod 256.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        vt::fill_logits_and_targets(c, info().id, rank, 19, 5, inputs[0], inputs[1]);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        std::map<std::string, double> p;
        vt::add_filter_params(p);
        p["chunk_size"] = static_cast<double>(vt::chunk(c));
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

const Problem& problem_83() {
    static const VocabParallelLogProbTopKChunked problem;
    return problem;
}

} // namespace pkbw::problems
