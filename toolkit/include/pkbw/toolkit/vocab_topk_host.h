// Host (float64) equivalent of vocab_topk.cuh: PKB 82/83's step over one chunk of tokens (exchange to
// token-parallel rows, top-k / top-p filter, target log-softmax, all-gather). Returns the chunk's
// [tokens] log-probs, identical on every rank. vocab_topk_log_prob_grad_f64 is 84's backward over one
// chunk: (onehot(target) - softmax(filtered)) · grad_output · keep, exchanged back to [tokens, lv].
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

// grad_output: the chunk's [tokens] upstream gradients; returns this rank's [tokens, lv] gradient.
inline std::vector<double>
vocab_topk_log_prob_grad_f64(const Context& ctx, DType d, const std::vector<double>& logits,
                             const std::int64_t* target, const std::vector<double>& grad_output,
                             std::int64_t tokens, std::int64_t lv, const TopKTopP& filter) {
    const std::int64_t local_tokens = tokens / ctx.world_size;
    const std::int64_t vocab = lv * ctx.world_size;
    const std::int64_t first = ctx.rank * local_tokens;
    const std::vector<double> rows = vocab_to_token_parallel_f64(ctx, logits, tokens, lv);
    std::vector<unsigned char> keep;
    const std::vector<double> filtered = top_k_top_p_f64(d, filter, rows, local_tokens, vocab, &keep);
    const std::vector<double> lse = row_logsumexp_f64(filtered, local_tokens, vocab);
    std::vector<double> grad(static_cast<std::size_t>(local_tokens * vocab));
    for (std::int64_t i = 0; i < local_tokens; ++i) {
        for (std::int64_t j = 0; j < vocab; ++j) {
            const double onehot = j == target[first + i] ? 1.0 : 0.0;
            grad[i * vocab + j] = (onehot - std::exp(filtered[i * vocab + j] - lse[i])) *
                                  grad_output[first + i] * keep[i * vocab + j];
        }
    }
    return token_to_vocab_parallel_f64(ctx, grad, local_tokens, lv);
}

} // namespace pkbw::tk
