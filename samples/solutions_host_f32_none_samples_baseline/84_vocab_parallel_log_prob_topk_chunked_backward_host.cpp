// Hand-written sample candidate (not LLM output)
// PKB 84 (chunked backward of the vocab-parallel top-k/top-p log-probs) on the host backend: every
// rank publishes its vocabulary slice in a symmetric buffer; after a barrier, chunk by chunk, each rank
// assembles the full rows of its share of the chunk's tokens, filters them (stable ascending sort,
// top-k, top-p) and writes the row's gradient (onehot - softmax) * grad_output * keep at the token's
// index of a symmetric [tokens, 256] buffer; after a second barrier every rank copies its vocabulary
// slice of each token's gradient from the rank that computed it.
#include "pkbw/solution.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace {
float bf16_to_float(std::uint16_t bits) {
    const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
    float v;
    std::memcpy(&v, &wide, sizeof v);
    return v;
}
} // namespace

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
    const auto* grad_output = ctx.input(2).as<const std::uint16_t>(); // bf16, as PKB's

    const pkbw::SymmetricMemory shards = ctx.symmetric("vlpb_host_logits", tokens * lv * sizeof(float));
    const pkbw::SymmetricMemory results = ctx.symmetric("vlpb_host_grad", tokens * vocab * sizeof(float));
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
            const float top = sorted[vocab - 1];
            float sum = 0.f;
            for (std::int64_t s = 0; s < vocab; ++s) {
                sum += keep[s] ? std::exp(sorted[s] - top) : 0.f;
            }
            const float g = bf16_to_float(grad_output[token]);
            float* grad = mine + token * vocab;
            for (std::int64_t s = 0; s < vocab; ++s) {
                const float p = keep[s] ? std::exp(sorted[s] - top) / sum : 0.f;
                const float onehot = order[s] == target[token] ? 1.f : 0.f;
                grad[order[s]] = keep[s] ? (onehot - p) * g : 0.f;
            }
        }
    }
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < tokens; ++i) {
        const std::int64_t start = i / chunk_tokens * chunk_tokens;
        const std::int64_t lt = (std::min(tokens, start + chunk_tokens) - start) / world;
        const float* src =
            static_cast<const float*>(results.peers[(i - start) / lt]) + i * vocab + ctx.rank * lv;
        std::copy(src, src + lv, out + i * lv);
    }
    ctx.barrier();
    return 0;
}
