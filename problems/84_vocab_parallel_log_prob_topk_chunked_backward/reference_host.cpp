// Host oracle for PKB problem 84: per chunk of b·chunk_size flat tokens, the float64 backward of 82's
// step (tk::vocab_topk_log_prob_grad_f64: exchange, filter with keep mask, (onehot - softmax)·
// grad_output·keep, exchange back), stored as fp32 into the chunk's rows of [b, s, 256/W].
#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/vocab_topk_host.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tk = pkbw::tk;

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& logits = ctx.input(0);
    const std::int64_t batch = logits.shape[0];
    const std::int64_t lv = logits.shape[logits.ndim - 1];
    const std::int64_t tokens = logits.numel() / lv;
    const std::int64_t chunk_tokens =
        batch * std::max<std::int64_t>(1, static_cast<std::int64_t>(ctx.param("chunk_size", 1)));
    if (chunk_tokens % ctx.world_size != 0) {
        return ctx.fail("84 oracle: b·chunk_size must be a multiple of W");
    }
    const tk::TopKTopP filter{static_cast<long long>(ctx.param("top_k", 0)), ctx.param("top_p", 1.0)};
    const std::vector<double> all = tk::to_f64(logits);
    const std::vector<double> grad_output = tk::to_f64(ctx.input(2));
    const auto* target = ctx.input(1).as<const std::int64_t>();
    for (std::int64_t start = 0; start < tokens; start += chunk_tokens) {
        const std::int64_t current = std::min(tokens, start + chunk_tokens) - start;
        const std::vector<double> chunk(all.begin() + start * lv, all.begin() + (start + current) * lv);
        const std::vector<double> g(grad_output.begin() + start, grad_output.begin() + start + current);
        const std::vector<double> grad = tk::vocab_topk_log_prob_grad_f64(
            ctx, logits.dtype, chunk, target + start, g, current, lv, filter);
        for (std::int64_t i = 0; i < current * lv; ++i) {
            tk::store(ctx.output(0), start * lv + i, grad[i]);
        }
    }
    return 0;
}
