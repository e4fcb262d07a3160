// PKB problem 82: vocab-parallel target log-probs under a top-k / top-p filter.
#include "vocab_topk_inputs.h"

namespace pkbw::problems {

const Problem& problem_82() {
    static const vocab_topk::LogProbTopKProblem problem(
        {.id = 82,
         .stem = "82_vocab_parallel_log_prob_topk",
         .category = "TI",
         .title = "Vocab-parallel log-probs with top-k/top-p",
         .description = "Rank r holds logits [b, s, 256/W] for vocabulary ids [r·256/W, (r+1)·256/W) "
                        "and the shared targets [b, s] (b = clamp(M/512, 1, 4), s = max(W, min(M/128, "
                        "32)) rounded up to a multiple of W). An all-to-all turns the logits token-"
                        "parallel (rank r gets full rows of tokens [r·bs/W, (r+1)·bs/W)); each row is "
                        "filtered (top_k = 10, then top_p = 0.9 over the sorted softmax in the dtype, "
                        "the rest -inf), log_softmax in fp32 gives the target's log-prob, and an "
                        "all-gather returns fp32 [b, s] on every rank. W must divide 256.",
         .mutates_inputs = false},
        {17, 3}, false);
    return problem;
}

} // namespace pkbw::problems
