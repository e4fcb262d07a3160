// PKB problem 83: problem 82 processed in chunks of b·chunk_size tokens.
#include "vocab_topk_inputs.h"

namespace pkbw::problems {

const Problem& problem_83() {
    static const vocab_topk::LogProbTopKProblem problem(
        {.id = 83,
         .stem = "83_vocab_parallel_log_prob_topk_chunked",
         .category = "TI",
         .title = "Chunked vocab-parallel log-probs with top-k/top-p",
         .description = "Problem 82 (vocab-parallel logits [b, s, 256/W] and shared targets [b, s]; "
                        "all-to-all to token-parallel rows, top_k = 10 / top_p = 0.9 filter in the "
                        "dtype, fp32 target log-prob, all-gather) run chunk by chunk over the flat "
                        "tokens: chunks of b·chunk_size tokens, chunk_size = min(s, max(W, s/4) rounded "
                        "up to a multiple of W), each with its own all-to-all and all-gather; the "
                        "result is fp32 [b, s]. W must divide 256.",
         .mutates_inputs = false},
        {19, 5}, true);
    return problem;
}

} // namespace pkbw::problems
