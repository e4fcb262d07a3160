// Vocab-parallel <-> token-parallel exchanges and target log-probs (PKB 82-84), on the device.
//
// Every rank holds [tokens, lv] logits for its vocabulary slice; token-parallel, rank r holds full rows
// [tokens / W, W·lv] of tokens [r·tokens/W, (r+1)·tokens/W) (PKB's all_to_all_single of the flat buffer,
// viewed [W, tokens/W, lv] and permuted to [tokens/W, W, lv]). token_to_vocab_parallel is the inverse
// (84's gradient). target_log_probs is log_softmax(rows.float())[i, target[i]].
//
//     PKBW_TRY(tk::vocab_to_token_parallel(ctx, 2, logits, tokens, lv, recv_scratch, rows));
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/alltoall.cuh"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/permute.cuh"
#include "pkbw/toolkit/reduce.cuh"
#include "pkbw/toolkit/types.cuh"

#include <cstdint>

namespace pkbw::tk {

// rows [tokens/W, W·lv] = the token-parallel rows of this rank; recv: scratch of tokens·lv elements.
inline int vocab_to_token_parallel(const Context& ctx, std::size_t elem_bytes, const void* logits,
                                   long long tokens, long long lv, void* recv, void* rows) {
    const long long local_tokens = tokens / ctx.world_size;
    PKBW_TRY(
        all_to_all(ctx, ctx.nccl(), logits, recv, static_cast<std::size_t>(local_tokens * lv) * elem_bytes));
    const long long shape[3] = {ctx.world_size, local_tokens, lv};
    const int perm[3] = {1, 0, 2};
    return permute(ctx, recv, rows, elem_bytes, 3, shape, perm);
}

// out [W·local_tokens, lv] = this rank's vocabulary slice of every rank's rows [local_tokens, W·lv];
// send: scratch of local_tokens·W·lv elements.
inline int token_to_vocab_parallel(const Context& ctx, std::size_t elem_bytes, const void* rows,
                                   long long local_tokens, long long lv, void* send, void* out) {
    const long long shape[3] = {local_tokens, ctx.world_size, lv};
    const int perm[3] = {1, 0, 2};
    PKBW_TRY(permute(ctx, rows, send, elem_bytes, 3, shape, perm));
    return all_to_all(ctx, ctx.nccl(), send, out, static_cast<std::size_t>(local_tokens * lv) * elem_bytes);
}

namespace vocab_detail {
template <class T>
__global__ void target_log_probs_kernel(const T* rows, const std::int64_t* target, const float* lse,
                                        long long count, long long n, float* out) {
    for (long long i = PKBW_GRID_STRIDE_BEGIN; i < count; i += PKBW_GRID_STRIDE_STEP)
        out[i] = to_float(rows[i * n + target[i]]) - lse[i];
}
} // namespace vocab_detail

// out[i] = log_softmax(rows[i].float())[target[i]] (fp32) for count rows of n; lse: scratch of count floats.
inline int target_log_probs(const Context& ctx, DType dtype, const void* rows, const std::int64_t* target,
                            long long count, long long n, float* lse, float* out) {
    PKBW_TRY(row_logsumexp(ctx, dtype, rows, count, n, lse));
    return dispatch_float(ctx, dtype, "target_log_probs", [&](auto tag) {
        using T = typename decltype(tag)::type;
        vocab_detail::target_log_probs_kernel<T><<<grid_for(count), 256, 0, ctx.stream()>>>(
            static_cast<const T*>(rows), target, lse, count, n, out);
        return finish(ctx);
    });
}

} // namespace pkbw::tk
