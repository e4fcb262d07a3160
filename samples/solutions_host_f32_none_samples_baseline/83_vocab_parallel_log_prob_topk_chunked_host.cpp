// Hand-written sample candidate (not LLM output)
// PKB 83 (chunked vocab-parallel log-probs with top-k/top-p) on the host backend: every rank publishes
// its vocabulary slice in a symmetric buffer; after a barrier, chunk by chunk (b·chunk_size tokens),
// each rank assembles the full rows of its share of the chunk's tokens, sorts each row (stable,
// ascending), applies top-k then top-p, takes the target's log-softmax and writes it at the token's
// index of its symmetric result buffer; after a second barrier every rank reads each token's log-prob
// from the rank that computed it.
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    if (in.dtype != pkbw::DType::F32) {
        return ctx.fail("host top-k log-prob sample: only f32 is supported");
    }
    const std::int64_t lv = in.shape[in.ndim - 1];
    const std::int64_t tokens = in.numel() / lv;
    const int world = ctx.world_size;
    const std::int64_t vocab = lv * world;
    const std::int64_t chunk_tokens =
        in.shape[0] * std::max<std::int64_t>(1, static_cast<std::int64_t>(ctx.param("chunk_size", 1)));
    const long long top_k = static_cast<long long>(ctx.param("top_k", 0));
    const double top_p = ctx.param("top_p", 1.0);
    const float bound = static_cast<float>(1.0 - top_p);
    const std::int64_t* target = ctx.input(1).as<const std::int64_t>();

    const pkbw::SymmetricMemory shards = ctx.symmetric("vlpc_host_logits", tokens * lv * sizeof(float));
    const pkbw::SymmetricMemory results = ctx.symmetric("vlpc_host_logp", tokens * sizeof(float));
    std::memcpy(shards.local, in.data, tokens * lv * sizeof(float));
    ctx.barrier();

    std::vector<float> row(vocab), sorted(vocab);
    std::vector<int> order(vocab);
    float* mine = static_cast<float*>(results.local);
    for (std::int64_t start = 0; start < tokens; start += chunk_tokens) {
        const std::int64_t lt = (std::min(tokens, start + chunk_tokens) - start) / world;
        for (std::int64_t t = 0; t < lt; ++t) {
            const std::int64_t token = start + ctx.rank * lt + t;
            for (int r = 0; r < world; ++r) {
                const float* src = static_cast<const float*>(shards.peers[r]) + token * lv;
                std::copy(src, src + lv, row.begin() + r * lv);
            }
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] < row[b]; });
            for (std::int64_t s = 0; s < vocab; ++s) {
                sorted[s] = row[order[s]];
            }
            std::vector<char> keep(vocab, 1);
            if (top_k > 0) {
                const float threshold = sorted[vocab - std::min<std::int64_t>(top_k, vocab)];
                for (std::int64_t s = 0; s < vocab; ++s) {
                    if (sorted[s] < threshold) {
                        keep[s] = 0;
                    }
                }
            }
            if (top_p < 1.0) {
                const float top = sorted[vocab - 1];
                float sum = 0.f;
                for (std::int64_t s = 0; s < vocab; ++s) {
                    sum += keep[s] ? std::exp(sorted[s] - top) : 0.f;
                }
                float prefix = 0.f;
                for (std::int64_t s = 0; s < vocab; ++s) {
                    prefix += keep[s] ? std::exp(sorted[s] - top) / sum : 0.f;
                    if (s != vocab - 1 && !(prefix > bound)) {
                        keep[s] = 0;
                    }
                }
            }
            float top = -INFINITY, sum = 0.f, target_logit = -INFINITY;
            for (std::int64_t s = 0; s < vocab; ++s) {
                if (keep[s]) {
                    top = std::max(top, sorted[s]);
                }
            }
            for (std::int64_t s = 0; s < vocab; ++s) {
                if (keep[s]) {
                    sum += std::exp(sorted[s] - top);
                    if (order[s] == target[token]) {
                        target_logit = sorted[s];
                    }
                }
            }
            mine[token] = target_logit - top - std::log(sum);
        }
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < tokens; ++i) {
        const std::int64_t start = i / chunk_tokens * chunk_tokens;
        const std::int64_t lt = (std::min(tokens, start + chunk_tokens) - start) / world;
        out[i] = static_cast<const float*>(results.peers[(i - start) / lt])[i];
    }
    ctx.barrier();
    return 0;
}
