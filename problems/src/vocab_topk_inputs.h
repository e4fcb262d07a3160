// Shapes and inputs shared by PKB 82-84 (vocab-parallel target log-probs under a top-k / top-p filter):
// batch = clamp(M / 512, 1, 4), seq = max(W, min(M / 128, 32)) rounded up to a multiple of W, a
// vocabulary of 256 split over the ranks (W must divide 256), top_k = 10, top_p = 0.9, and for the
// chunked variants chunk = min(seq, max(W, seq / 4) rounded up to a multiple of W).
#pragma once

#include "problem_util.h"
#include "shared_inputs.h"

#include <algorithm>
#include <cstdint>

namespace pkbw::problems::vocab_topk {

constexpr std::int64_t kVocab = 256;
constexpr double kTopK = 10;
constexpr double kTopP = 0.9;

inline std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}
inline std::int64_t batch(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, std::min<std::int64_t>(c.m / 512, 4));
}
inline std::int64_t seq(const ProblemConfig& c) {
    return round_up(std::max<std::int64_t>(c.world_size, std::min<std::int64_t>(c.m / 128, 32)),
                    c.world_size);
}
inline std::int64_t local_vocab(const ProblemConfig& c) {
    return kVocab / c.world_size;
}
inline std::int64_t chunk(const ProblemConfig& c) {
    return std::min(seq(c), round_up(std::max<std::int64_t>(c.world_size, seq(c) / 4), c.world_size));
}

inline std::optional<std::string> check(const ProblemConfig& c, const ProblemInfo& info) {
    if (auto error = check_common(c, info)) {
        return error;
    }
    return require_divides(info, c.world_size, "W", kVocab, "the vocabulary size 256");
}

// Logits: standard normal per rank (exact mode: k/4), each rounded to the dtype, then PKB's target
// boost: + 8 (rounded to the dtype) where this rank's vocabulary id equals the token's target.
// Targets: (multiplier·i + offset + trial) mod 256 over the flat token index, the same on every rank.
inline void fill_logits_and_targets(const ProblemConfig& c, int id, int rank, std::int64_t multiplier,
                                    std::int64_t offset, Tensor& logits, Tensor& target) {
    const CounterRng rng = input_rng(c, id, rank, 0);
    if (c.input_mode == InputMode::Exact) {
        fill_exact(logits, rng, 8);
    } else {
        fill_normal(logits, rng);
    }
    const auto target_of = [&](std::int64_t token) {
        return (token * multiplier + offset + c.trial) % kVocab;
    };
    fill_slice(target, 0,
               [&](std::uint64_t i) { return static_cast<double>(target_of(static_cast<std::int64_t>(i))); });
    const std::int64_t lv = local_vocab(c);
    const std::int64_t tokens = batch(c) * seq(c);
    const std::size_t size = dtype_size(logits.dtype());
    std::byte* data = logits.mutable_data();
    for (std::int64_t t = 0; t < tokens; ++t) {
        const std::int64_t v = target_of(t) - rank * lv;
        if (v >= 0 && v < lv) {
            std::byte* element = data + (t * lv + v) * size;
            f64_to_element(logits.dtype(), element_to_f64(logits.dtype(), element) + 8.0, element);
        }
    }
}

inline void add_filter_params(std::map<std::string, double>& params) {
    params["top_k"] = kTopK;
    params["top_p"] = kTopP;
}

} // namespace pkbw::problems::vocab_topk
