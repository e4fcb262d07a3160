// Host (float64) equivalent of vocab_topk.cuh: PKB 82/83's step over one chunk of tokens (exchange to
// token-parallel rows, top-k / top-p filter, target log-softmax, all-gather). Returns the chunk's
// [tokens] log-probs, identical on every rank.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/topk_host.h"
#include "pkbw/toolkit/vocab_parallel_host.h"

#include <cstdint>
#include <vector>

namespace pkbw::tk {

// logits: this rank's chunk [tokens, lv] in float64 (values of dtype d); target: the chunk's targets.
inline std::vector<double> vocab_topk_target_log_probs_f64(const Context& ctx, DType d,
                                                           const std::vector<double>& logits,
                                                           const std::int64_t* target, std::int64_t tokens,
                                                           std::int64_t lv, const TopKTopP& filter) {
    const std::int64_t local_tokens = tokens / ctx.world_size;
    const std::int64_t vocab = lv * ctx.world_size;
    const std::vector<double> rows = vocab_to_token_parallel_f64(ctx, logits, tokens, lv);
    const std::vector<double> filtered = top_k_top_p_f64(d, filter, rows, local_tokens, vocab);
    const std::vector<double> mine =
        target_log_probs_f64(filtered, target + ctx.rank * local_tokens, local_tokens, vocab);
    return all_gather_f64(ctx, mine);
}

} // namespace pkbw::tk
