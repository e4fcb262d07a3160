// Host (float64) equivalents of vocab_parallel.cuh: the vocab-parallel <-> token-parallel exchanges of
// PKB 82-84 over ctx.all_gather_host, and the target log-probs.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace pkbw::tk {

// local [tokens, lv] on every rank -> this rank's token-parallel rows [tokens/W, W·lv].
inline std::vector<double> vocab_to_token_parallel_f64(const Context& ctx, const std::vector<double>& local,
                                                       std::int64_t tokens, std::int64_t lv) {
    const std::vector<double> all = all_gather_f64(ctx, local);
    const std::int64_t w = ctx.world_size, lt = tokens / w;
    std::vector<double> rows(static_cast<std::size_t>(lt * w * lv));
    for (std::int64_t t = 0; t < lt; ++t)
        for (std::int64_t r = 0; r < w; ++r)
            for (std::int64_t v = 0; v < lv; ++v)
                rows[(t * w + r) * lv + v] = all[r * tokens * lv + (ctx.rank * lt + t) * lv + v];
    return rows;
}

// rows [local_tokens, W·lv] on every rank -> this rank's vocabulary slice [W·local_tokens, lv].
inline std::vector<double> token_to_vocab_parallel_f64(const Context& ctx, const std::vector<double>& rows,
                                                       std::int64_t local_tokens, std::int64_t lv) {
    const std::vector<double> all = all_gather_f64(ctx, rows);
    const std::int64_t w = ctx.world_size, per_rank = local_tokens * w * lv;
    std::vector<double> out(static_cast<std::size_t>(w * local_tokens * lv));
    for (std::int64_t j = 0; j < w; ++j)
        for (std::int64_t t = 0; t < local_tokens; ++t)
            for (std::int64_t v = 0; v < lv; ++v)
                out[(j * local_tokens + t) * lv + v] = all[j * per_rank + (t * w + ctx.rank) * lv + v];
    return out;
}

// log_softmax(rows[i])[target[i]] for count rows of n (rows may hold -inf; one finite value per row).
inline std::vector<double> target_log_probs_f64(const std::vector<double>& rows, const std::int64_t* target,
                                                std::int64_t count, std::int64_t n) {
    const std::vector<double> lse = row_logsumexp_f64(rows, count, n);
    std::vector<double> out(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i)
        out[i] = rows[i * n + target[i]] - lse[i];
    return out;
}

} // namespace pkbw::tk
