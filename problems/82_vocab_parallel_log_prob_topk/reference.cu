// Reference for PKB problem 82 on the toolkit: one tk::vocab_topk_target_log_probs over all tokens
// (tk::vocab_to_token_parallel = all-to-all + permute to full rows of this rank's tokens,
// tk::top_k_top_p = the filter in the dtype, tk::target_log_probs = fp32 log_softmax at the target,
// ncclAllGather of the fp32 log-probs into [b, s]).
#include "pkbw/solution.h"
#include "pkbw/toolkit/check.cuh"
#include "pkbw/toolkit/vocab_topk.cuh"

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const long long lv = logits.shape[logits.ndim - 1];
    const long long tokens = logits.numel() / lv;
    const tk::TopKTopP filter{static_cast<long long>(ctx.param("top_k", 0)), ctx.param("top_p", 1.0)};
    PKBW_TRY(tk::vocab_topk_target_log_probs(ctx, logits.dtype, logits.data,
                                             ctx.input(1).as<const std::int64_t>(), tokens, tokens, lv,
                                             filter, ctx.output(0).as<float>()));
    return tk::finish(ctx);
}
