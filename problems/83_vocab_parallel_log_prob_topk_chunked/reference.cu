// Reference for PKB problem 83 on the toolkit: problem 82's step (tk::vocab_topk_target_log_probs:
// all-to-all to token rows, top-k / top-p filter, fp32 target log-softmax, all-gather) once per chunk of
// b·chunk_size flat tokens, as PKB's loop does, each chunk's log-probs gathered into its slice of [b, s].
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/vocab_topk.cuh"

#include <algorithm>
#include <cstdint>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const long long batch = logits.shape[0];
    const long long lv = logits.shape[logits.ndim - 1];
    const long long tokens = logits.numel() / lv;
    const long long chunk_tokens = batch * std::max(1LL, static_cast<long long>(ctx.param("chunk_size", 1)));
    if (chunk_tokens % ctx.world_size != 0)
        return ctx.fail("83 reference: b·chunk_size must be a multiple of W");
    const tk::TopKTopP filter{static_cast<long long>(ctx.param("top_k", 0)), ctx.param("top_p", 1.0)};
    const auto* bytes = static_cast<const unsigned char*>(logits.data);
    const std::size_t row_bytes = static_cast<std::size_t>(lv) * pkbw::element_size(logits.dtype);
    for (long long start = 0; start < tokens; start += chunk_tokens) {
        const long long current = std::min(tokens, start + chunk_tokens) - start;
        PKBW_TRY(tk::vocab_topk_target_log_probs(
            ctx, logits.dtype, bytes + start * row_bytes, ctx.input(1).as<const std::int64_t>() + start,
            current, chunk_tokens, lv, filter, ctx.output(0).as<float>() + start));
    }
    return tk::finish(ctx);
}
