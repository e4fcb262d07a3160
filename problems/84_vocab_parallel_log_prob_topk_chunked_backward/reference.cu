// Reference for PKB problem 84 on the toolkit: per chunk of b·chunk_size flat tokens,
// tk::vocab_topk_log_prob_grad (82's exchange and filter, now with the keep mask; fp32
// (onehot - softmax)·grad_output·keep; tk::token_to_vocab_parallel back) into the chunk's rows of the
// fp32 [b, s, 256/W] output.
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/vocab_topk.cuh"

#include <algorithm>
#include <cstdint>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const pkbw::TensorView& grad_output = ctx.input(2);
    const long long batch = logits.shape[0];
    const long long lv = logits.shape[logits.ndim - 1];
    const long long tokens = logits.numel() / lv;
    const long long chunk_tokens = batch * std::max(1LL, static_cast<long long>(ctx.param("chunk_size", 1)));
    if (chunk_tokens % ctx.world_size != 0)
        return ctx.fail("84 reference: b·chunk_size must be a multiple of W");
    const tk::TopKTopP filter{static_cast<long long>(ctx.param("top_k", 0)), ctx.param("top_p", 1.0)};
    const auto* bytes = static_cast<const unsigned char*>(logits.data);
    const std::size_t row_bytes = static_cast<std::size_t>(lv) * pkbw::element_size(logits.dtype);
    const std::size_t grad_bytes = pkbw::element_size(grad_output.dtype);
    for (long long start = 0; start < tokens; start += chunk_tokens) {
        const long long current = std::min(tokens, start + chunk_tokens) - start;
        PKBW_TRY(tk::vocab_topk_log_prob_grad(
            ctx, logits.dtype, bytes + start * row_bytes, ctx.input(1).as<const std::int64_t>() + start,
            grad_output.dtype, static_cast<const unsigned char*>(grad_output.data) + start * grad_bytes,
            current, chunk_tokens, lv, filter, ctx.output(0).as<float>() + start * lv));
    }
    return tk::finish(ctx);
}
