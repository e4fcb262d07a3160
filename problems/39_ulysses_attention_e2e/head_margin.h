// Problem 39's draws without near ties between heads. With PKB's standard-normal weights the head-axis
// scores q·k/8 are ~5·10², so each row of the softmax is nearly one-hot; where a row's two largest scores
// lie within a few units of each other, one ulp of a GEMM's accumulation moves the mix of two value rows,
// and an honest candidate whose fp32 sums run in another order than the reference's misses PKB's tolerance
// on a few elements (docs/problems.md, 39). No order of summation is right there: PKB's own CPU and GPU
// references disagree on such rows. So a token whose rows have a gap below the margin is drawn again (its
// hidden row alone, from a stream of its own), until every row of every head chunk has the margin: PKB's
// distribution conditioned on a well-posed answer. The weights stay PKB's draws.
#pragma once

#include "pkbw/core/dtype.h"
#include "pkbw/core/random.h"
#include "pkbw/core/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace pkbw::problems {

// The smallest gap (in units of the scaled score) a row's two largest scores must keep. fp32: the score's
// accumulation error is ~10⁻³, and at a gap of 8 the second head's weight is below e⁻⁸, so a change of
// the score moves the output by ~10⁻⁵, far inside PKB's atol of 10⁻². 16-bit types: the score itself is
// rounded to D (one ulp is 2-16 units at these magnitudes), so two flips must still leave e⁻¹⁶.
inline double head_score_margin(DType dtype) {
    return dtype == DType::BF16 || dtype == DType::F16 ? 32.0 : 8.0;
}

// Whether the token whose hidden row is `hidden` ([width]) has every head chunk's rows separated by
// `margin`: heads split into `chunks` chunks of consecutive heads (the ranks' shares after the
// all-to-all); within a chunk, row i's scores are q_i·k_l / sqrt(head_dim) over the chunk's heads l.
inline bool token_well_separated(const std::vector<double>& hidden, const std::vector<double>& w_qkv,
                                 std::int64_t heads, std::int64_t head_dim, int chunks, double margin) {
    const std::int64_t per_chunk = heads / chunks;
    if (per_chunk < 2) {
        return true; // one head: the softmax is 1 whatever the scores
    }
    const std::int64_t width = heads * head_dim;
    std::vector<double> qk(static_cast<std::size_t>(2 * width), 0.0); // q then k, all heads
    for (std::int64_t o = 0; o < 2 * width; ++o) {
        const double* w = &w_qkv[static_cast<std::size_t>(o * width)];
        double sum = 0;
        for (std::int64_t e = 0; e < width; ++e) {
            sum += hidden[static_cast<std::size_t>(e)] * w[e];
        }
        qk[static_cast<std::size_t>(o)] = sum;
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
    for (std::int64_t i = 0; i < heads; ++i) {
        const std::int64_t first = i / per_chunk * per_chunk;
        double best = -1e300, second = -1e300;
        for (std::int64_t l = first; l < first + per_chunk; ++l) {
            double dot = 0;
            for (std::int64_t e = 0; e < head_dim; ++e) {
                dot += qk[static_cast<std::size_t>(i * head_dim + e)] *
                       qk[static_cast<std::size_t>(width + l * head_dim + e)];
            }
            const double score = dot * scale;
            second = std::max(second, std::min(best, score));
            best = std::max(best, score);
        }
        if (best - second < margin) {
            return false;
        }
    }
    return true;
}

// Redraws, in place, every token of `hidden` ([tokens, width], already PKB's draw) that lacks the
// margin: attempt a draws the token's row from stream `first_stream + a` of `seed` (element index =
// the element's index in the tensor, as the first draw), rounded to the tensor's dtype. Returns how many
// tokens still lack it after `max_attempts` (kept as drawn; 0 in practice: each attempt fails with
// probability ~0.5 at worst).
inline int redraw_near_ties(Tensor& hidden, const Tensor& w_qkv, std::int64_t heads, int chunks,
                            double margin, std::uint64_t seed, std::uint64_t first_stream,
                            int max_attempts = 256) {
    const std::int64_t width = hidden.shape().back(), tokens = hidden.numel() / width;
    const std::size_t size = dtype_size(hidden.dtype());
    const std::vector<double> weights = w_qkv.to_f64();
    std::byte* data = hidden.mutable_data();
    int left = 0;
    std::vector<double> row(static_cast<std::size_t>(width));
    for (std::int64_t t = 0; t < tokens; ++t) {
        std::byte* token = data + static_cast<std::size_t>(t * width) * size;
        bool separated = false;
        for (int attempt = 0; attempt <= max_attempts && !separated; ++attempt) {
            if (attempt > 0) {
                const CounterRng rng(seed, first_stream + static_cast<std::uint64_t>(attempt - 1));
                for (std::int64_t e = 0; e < width; ++e) {
                    f64_to_element(hidden.dtype(), rng.normal(static_cast<std::uint64_t>(t * width + e)),
                                   token + static_cast<std::size_t>(e) * size);
                }
            }
            for (std::int64_t e = 0; e < width; ++e) {
                row[static_cast<std::size_t>(e)] =
                    element_to_f64(hidden.dtype(), token + static_cast<std::size_t>(e) * size);
            }
            separated = token_well_separated(row, weights, heads, width / heads, chunks, margin);
        }
        left += separated ? 0 : 1;
    }
    return left;
}

} // namespace pkbw::problems
