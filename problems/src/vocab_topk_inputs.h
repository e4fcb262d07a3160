// Shapes and inputs shared by PKB 82-84 (vocab-parallel target log-probs under a top-k / top-p filter):
// batch = clamp(M / 512, 1, 4), seq = max(W, min(M / 128, 32)) rounded up to a multiple of W, a
// vocabulary of 256 split over the ranks (W must divide 256), top_k = 10, top_p = 0.9, and for the
// chunked variants chunk = min(seq, max(W, seq / 4) rounded up to a multiple of W).
#pragma once

#include "problem_util.h"
#include "shared_inputs.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

// top_k and top_p, and for the chunked variants (83, 84) chunk_size.
inline std::map<std::string, double> filter_params(const ProblemConfig& c, bool chunked) {
    std::map<std::string, double> params{{"top_k", kTopK}, {"top_p", kTopP}};
    if (chunked) {
        params["chunk_size"] = static_cast<double>(chunk(c));
    }
    return params;
}

// PKB's first two arguments: vocab_parallel_logits [b, s, 256/W] in the dtype and target [b, s] int64.
inline std::vector<TensorSpec> logits_and_target_specs(const ProblemConfig& c) {
    return {{"vocab_parallel_logits", c.dtype, {batch(c), seq(c), local_vocab(c)}},
            {"target", DType::I64, {batch(c), seq(c)}}};
}

// PKB's targets: (multiplier·i + offset + trial) mod 256 (82: 17 i + 3, 83 and 84: 19 i + 5).
struct TargetRule {
    std::int64_t multiplier;
    std::int64_t offset;
};

// The forward problems 82 and 83: the target log-probs fp32 [b, s] on every rank, of the whole batch
// at once (82) or chunk by chunk (83, which publishes chunk_size); the values are the same.
class LogProbTopKProblem final : public BasicProblem {
public:
    LogProbTopKProblem(ProblemInfo info, TargetRule targets, bool chunked)
        : BasicProblem(std::move(info))
        , targets_(targets)
        , chunked_(chunked) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        return check(c, info());
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return logits_and_target_specs(c);
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", DType::F32, {batch(c), seq(c)}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_logits_and_targets(c, info().id, rank, targets_.multiplier, targets_.offset, inputs[0],
                                inputs[1]);
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        return filter_params(c, chunked_);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double tokens = static_cast<double>(batch(c) * seq(c));
        const double e = elem_bytes(c);
        const double local_rows = tokens / c.world_size;
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = tokens * static_cast<double>(local_vocab(c)) * e,
                .flops = local_rows * static_cast<double>(kVocab) * 16,
                .memory_bytes = 2 * tokens * static_cast<double>(local_vocab(c)) * e + tokens * 12};
    }

private:
    TargetRule targets_;
    bool chunked_;
};

} // namespace pkbw::problems::vocab_topk
