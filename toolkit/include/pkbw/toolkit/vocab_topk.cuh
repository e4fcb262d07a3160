// PKB 82/83's step over one chunk of tokens, on the device: vocab-parallel logits [tokens, lv] ->
// token-parallel rows (tk::vocab_to_token_parallel), the top-k / top-p filter (tk::top_k_top_p), the
// target's fp32 log-softmax (tk::target_log_probs) and ncclAllGather into out[tokens] (fp32). Problem 82
// calls it once over all tokens, 83 once per chunk. Scratch names are fixed, so chunks reuse them.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/topk.cuh"
#include "pkbw/toolkit/vocab_parallel.cuh"

#include <cstdint>

namespace pkbw::tk {

// logits: this rank's [tokens, lv] (the chunk); target: the chunk's [tokens] targets (global vocabulary
// ids, the same on every rank); scratch sized for max_tokens so every chunk reuses the same buffers.
inline int vocab_topk_target_log_probs(const Context& ctx, DType dtype, const void* logits,
                                       const std::int64_t* target, long long tokens, long long max_tokens,
                                       long long lv, const TopKTopP& filter, float* out) {
    const std::size_t e = element_size(dtype);
    const long long local_tokens = tokens / ctx.world_size;
    const long long vocab = lv * ctx.world_size;
    void* recv = ctx.scratch("tk_vocab_topk_recv", max_tokens * lv * e);
    void* rows = ctx.scratch("tk_vocab_topk_rows", max_tokens * lv * e);
    void* filtered = ctx.scratch("tk_vocab_topk_filtered", max_tokens * lv * e);
    float* lse = static_cast<float*>(ctx.scratch("tk_vocab_topk_lse", max_tokens * sizeof(float)));
    float* mine = static_cast<float*>(ctx.scratch("tk_vocab_topk_mine", max_tokens * sizeof(float)));
    PKBW_TRY(vocab_to_token_parallel(ctx, e, logits, tokens, lv, recv, rows));
    PKBW_TRY(top_k_top_p(ctx, dtype, rows, local_tokens, vocab, filter, filtered, nullptr));
    PKBW_TRY(target_log_probs(ctx, dtype, filtered, target + ctx.rank * local_tokens, local_tokens, vocab,
                              lse, mine));
    PKBW_CHECK(ctx, ncclAllGather(mine, out, local_tokens, ncclFloat32, ctx.nccl(), ctx.stream()));
    return 0;
}

} // namespace pkbw::tk
