// PKB problem 46: decode-time vocabulary projection (GEMV) on a vocabulary shard, all-gathered.
#include "problem_util.h"
#include "shared_inputs.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

struct GemvShape {
    std::int64_t tokens, hidden, vocab, local_vocab;
};

// PKB's derived sizes: tokens = clamp(M / 1024, 1, 8), hidden = clamp(N, 128, 4096),
// vocab = max(M, 1024 W) rounded up to a multiple of W.
GemvShape gemv_shape(const ProblemConfig& c) {
    const std::int64_t w = c.world_size;
    const std::int64_t tokens = std::max<std::int64_t>(1, std::min<std::int64_t>(8, c.m / 1024));
    const std::int64_t hidden = std::max<std::int64_t>(128, std::min<std::int64_t>(c.n, 4096));
    const std::int64_t base = std::max<std::int64_t>(c.m, w * 1024);
    const std::int64_t vocab = (base + w - 1) / w * w;
    return {tokens, hidden, vocab, vocab / w};
}

class GemvDecode final : public BasicProblem {
public:
    GemvDecode()
        : BasicProblem({.id = 46,
                        .stem = "46_gemv_decode",
                        .category = "FCC",
                        .title = "Vocab-parallel GEMV decode",
                        .description =
                            "Every rank holds the same hidden states [t, H] and its vocabulary shard of "
                            "an output projection (weight [V/W, H], bias [V/W]). Each computes its logits "
                            "h·Wᵀ (rounded to the dtype) + b, and every rank returns the all-gathered "
                            "logits [t, V] in rank order along the vocabulary. t = clamp(M/1024, 1, 8), "
                            "H = clamp(N, 128, 4096), V = max(M, 1024·W) rounded up to a multiple of W."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const GemvShape s = gemv_shape(c);
        return {{"hidden_states", c.dtype, {s.tokens, s.hidden}},
                {"weight_shard", c.dtype, {s.local_vocab, s.hidden}},
                {"bias_shard", c.dtype, {s.local_vocab}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        const GemvShape s = gemv_shape(c);
        return {{"output", c.dtype, {s.tokens, s.vocab}}};
    }
    // PKB seeds with rank 0 and slices one full weight and bias per rank: rank r's shard is rows
    // [r V/W, (r+1) V/W) of the shared draw, and the hidden states are the same everywhere.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        const GemvShape s = gemv_shape(c);
        const std::int64_t offsets[3] = {0, rank * s.local_vocab * s.hidden, rank * s.local_vocab};
        for (int k = 0; k < 3; ++k) {
            const CounterRng rng = input_rng(c, info().id, 0, k);
            if (c.input_mode == InputMode::Exact) {
                fill_exact_slice(inputs[k], rng, offsets[k], 8);
            } else {
                fill_normal_slice(inputs[k], rng, offsets[k]);
            }
        }
    }
    WorkModel work(const ProblemConfig& c) const override {
        const GemvShape s = gemv_shape(c);
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = static_cast<double>(s.tokens * s.vocab) * e,
                .flops = 2.0 * static_cast<double>(s.tokens * s.local_vocab * s.hidden),
                .memory_bytes =
                    static_cast<double>(s.local_vocab * (s.hidden + 1) + s.tokens * s.hidden) * e +
                    static_cast<double>(s.tokens * s.vocab) * e};
    }
};

} // namespace

const Problem& problem_46() {
    static const GemvDecode problem;
    return problem;
}

} // namespace pkbw::problems
