// Problem 77's sizes and inputs (PKB's create_input_tensor for magi1_cso_async_attention), for the
// descriptor and its tests.
#pragma once

#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {

constexpr std::int64_t kMagiRanges = 4; // cp_shuffle_num
constexpr std::int64_t kMagiHeadDim = 128;

struct MagiDims {
    DType dtype = DType::BF16;        // PKB's attn_dtype: bf16 for bf16 and f16, else the dtype
    std::int64_t range_tokens = 0;    // K: chunk_token_nums (= clip_token_nums)
    std::int64_t slice_tokens = 0;    // S = ceil(K / W): a rank's tokens per range
    std::int64_t q_heads = 0;         // Hq
    std::int64_t kv_heads = 0;        // Hkv as drawn
    std::int64_t kv_heads_spread = 0; // after PKB's repeat_interleave up to W heads (W % Hkv == 0, Hkv < W)
    std::int64_t tokens() const { return kMagiRanges * slice_tokens; }
};

// PKB: W <= 4: Hq = 24, K = 12150; W > 4: Hq = 48, K = 21600; Hq rounded down to a multiple of W (at
// least W) when W does not divide it; Hkv = 8, or W when neither divides the other. pkbw scales K by
// N / 1024 (rounded down), so that the host oracle's O(K^2) attention fits a small CPU at test shapes.
inline MagiDims magi_dims(const ProblemConfig& c) {
    const std::int64_t w = c.world_size;
    MagiDims d;
    d.dtype = c.dtype == DType::F16 || c.dtype == DType::BF16 ? DType::BF16 : c.dtype;
    const std::int64_t base_tokens = w <= 4 ? 12150 : 21600;
    d.range_tokens = base_tokens * c.n / 1024;
    d.slice_tokens = d.range_tokens < 1 ? 0 : (d.range_tokens + w - 1) / w;
    d.q_heads = w <= 4 ? 24 : 48;
    if (d.q_heads % w != 0) {
        d.q_heads = w * std::max<std::int64_t>(1, d.q_heads / w);
    }
    d.kv_heads = 8;
    if (d.kv_heads % w != 0 && w % d.kv_heads != 0) {
        d.kv_heads = w;
    }
    d.kv_heads_spread = d.kv_heads < w && w % d.kv_heads == 0 ? w : d.kv_heads;
    return d;
}

// query and key_value standard normal (each from its own stream; PKB draws key and value separately
// and concatenates them: the halves of each row here come from one stream, which has the same
// distribution), k_ranges = [[i K, (i + 1) K]].
inline void fill_magi_inputs(const ProblemConfig& c, int problem_id, int rank, std::vector<Tensor>& inputs) {
    const MagiDims d = magi_dims(c);
    for (int k = 0; k < 2; ++k) {
        const CounterRng rng = input_rng(c, problem_id, rank, k);
        if (c.input_mode == InputMode::Exact) {
            fill_exact(inputs[static_cast<std::size_t>(k)], rng, 2);
        } else {
            fill_normal(inputs[static_cast<std::size_t>(k)], rng);
        }
    }
    std::vector<double> ranges;
    for (std::int64_t i = 0; i < kMagiRanges; ++i) {
        ranges.push_back(static_cast<double>(i * d.range_tokens));
        ranges.push_back(static_cast<double>((i + 1) * d.range_tokens));
    }
    fill_values(inputs[2], ranges);
}

} // namespace pkbw::problems
