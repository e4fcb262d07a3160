// PKB 82/83's step over one chunk of tokens, on the device: vocab-parallel logits [tokens, lv] ->
// token-parallel rows (tk::vocab_to_token_parallel), the top-k / top-p filter (tk::top_k_top_p), the
// target's fp32 log-softmax (tk::target_log_probs) and ncclAllGather into out[tokens] (fp32). Problem 82
// calls it once over all tokens, 83 once per chunk. Scratch names are fixed, so chunks reuse them.
// vocab_topk_log_prob_grad is 84's backward over one chunk: the same exchange and filter (with its keep
// mask), grad = (onehot(target) - softmax(filtered.float())) · grad_output · keep in fp32, and the
// all-to-all back to vocab-parallel [tokens, lv].
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

namespace vocab_detail {
// One block per row: grad[i, j] = ((j == target[i]) - exp(f[i, j] - lse[i])) · g[i] · keep[i, j], the fp32
// ops of PKB's `-probs; [target] += 1; mul_(grad_output); mul_(keep_mask)`.
template <class T, class G>
__global__ void log_prob_grad_kernel(const T* filtered, const unsigned char* keep, const float* lse,
                                     const std::int64_t* target, const G* grad_output, long long n,
                                     float* grad) {
    const long long row = blockIdx.x;
    const float g = to_float(grad_output[row]);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
        float v = -expf(to_float(filtered[row * n + j]) - lse[row]);
        if (j == target[row])
            v += 1.f;
        grad[row * n + j] = v * g * static_cast<float>(keep[row * n + j]);
    }
}
} // namespace vocab_detail

// grad_output: the chunk's [tokens] upstream gradients (bf16, as PKB's, or the logits' dtype:
// grad_dtype); out: this rank's [tokens, lv] fp32 gradient of the chunk.
inline int vocab_topk_log_prob_grad(const Context& ctx, DType dtype, const void* logits,
                                    const std::int64_t* target, DType grad_dtype, const void* grad_output,
                                    long long tokens, long long max_tokens, long long lv,
                                    const TopKTopP& filter, float* out) {
    const std::size_t e = element_size(dtype);
    const long long local_tokens = tokens / ctx.world_size;
    const long long vocab = lv * ctx.world_size;
    void* recv = ctx.scratch("tk_vocab_topk_recv", max_tokens * lv * e);
    void* rows = ctx.scratch("tk_vocab_topk_rows", max_tokens * lv * e);
    void* filtered = ctx.scratch("tk_vocab_topk_filtered", max_tokens * lv * e);
    auto* keep = static_cast<unsigned char*>(ctx.scratch("tk_vocab_topk_keep", max_tokens * lv));
    float* lse = static_cast<float*>(ctx.scratch("tk_vocab_topk_lse", max_tokens * sizeof(float)));
    float* grad = static_cast<float*>(ctx.scratch("tk_vocab_topk_grad", max_tokens * lv * sizeof(float)));
    float* send = static_cast<float*>(ctx.scratch("tk_vocab_topk_send", max_tokens * lv * sizeof(float)));
    PKBW_TRY(vocab_to_token_parallel(ctx, e, logits, tokens, lv, recv, rows));
    PKBW_TRY(top_k_top_p(ctx, dtype, rows, local_tokens, vocab, filter, filtered, keep));
    PKBW_TRY(row_logsumexp(ctx, dtype, filtered, local_tokens, vocab, lse));
    const long long first = ctx.rank * local_tokens;
    PKBW_TRY(dispatch_float(ctx, dtype, "vocab_topk_log_prob_grad", [&](auto tag) {
        using T = typename decltype(tag)::type;
        return dispatch_float(ctx, grad_dtype, "vocab_topk_log_prob_grad (grad_output)", [&](auto gtag) {
            using G = typename decltype(gtag)::type;
            if (local_tokens > 0)
                vocab_detail::log_prob_grad_kernel<T, G>
                    <<<static_cast<unsigned>(local_tokens), 256, 0, ctx.stream()>>>(
                        static_cast<const T*>(filtered), keep, lse, target + first,
                        static_cast<const G*>(grad_output) + first, vocab, grad);
            return finish(ctx);
        });
    }));
    return token_to_vocab_parallel(ctx, sizeof(float), grad, local_tokens, lv, send, out);
}

} // namespace pkbw::tk
