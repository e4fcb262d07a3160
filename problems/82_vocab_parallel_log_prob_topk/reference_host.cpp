// Host oracle for PKB problem 82 on the toolkit's host helpers: one tk::vocab_topk_target_log_probs_f64
// over all tokens (the logits gathered into this rank's token rows, the float64 top-k / top-p filter
// with the toolkit's tie rule of topk_rule.h, the target log-probs in double, an all-gather), stored
// as fp32.
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/vocab_topk_host.h"

#include <cstdint>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const std::int64_t lv = logits.shape[logits.ndim - 1];
    const std::int64_t tokens = logits.numel() / lv;
    const tk::TopKTopP filter{static_cast<long long>(ctx.param("top_k", 0)), ctx.param("top_p", 1.0)};
    tk::store_all(ctx.output(0), tk::vocab_topk_target_log_probs_f64(ctx, logits.dtype, tk::to_f64(logits),
                                                                     ctx.input(1).as<const std::int64_t>(),
                                                                     tokens, lv, filter));
    return 0;
}
