// Shapes, grids and inputs shared by the attention descriptors (PKB 39, 54-57, 74, 75): PKB's
// _common_attn_dims, the min(2, W) second axis of 55-57's grids and its world-size rule, and a
// per-(grid position) normal draw for inputs PKB seeds by cp/tp/pp/dp rank instead of the rank.
#pragma once

#include "problem_util.h"

#include <algorithm>
#include <optional>
#include <string>

namespace pkbw::problems {

constexpr std::int64_t kAttnHeads = 8;
constexpr std::int64_t kAttnHeadDim = 64;
constexpr std::int64_t kAttnHidden = kAttnHeads * kAttnHeadDim;

// PKB's _common_attn_dims: B = max(1, M/64), T = max(1, N/64); the sequence split over `parts` ranks is
// max(1, T/parts) (PKB rounds down and never pads).
inline std::int64_t attn_batch(const ProblemConfig& c) {
    return std::max<std::int64_t>(1, c.m / 64);
}
inline std::int64_t attn_local_seq(const ProblemConfig& c, std::int64_t parts) {
    return std::max<std::int64_t>(1, std::max<std::int64_t>(1, c.n / 64) / parts);
}

// check_common plus PKB's _common_attn_dims assertion: W divides the 8 heads (39, 54, 57).
inline std::optional<std::string> check_attn_heads(const ProblemConfig& c, const ProblemInfo& info) {
    if (auto why = check_common(c, info)) {
        return why;
    }
    return require_divides(info, c.world_size, "W", kAttnHeads, "the head count");
}

// 55-57's second grid axis (TP, PP or DP): PKB's min(2, W); W = 1 or even.
inline int attn_pair_size(int world) {
    return world < 2 ? world : 2;
}
inline std::optional<std::string> require_pair_grid(const ProblemInfo& info, int world) {
    if (world == 1 || world % 2 == 0) {
        return std::nullopt;
    }
    return info.stem + ": W = " + std::to_string(world) +
           " must be 1 or even (PKB's grid has a second axis of min(2, W) ranks)";
}

// Input `tensor` drawn from the stream of grid position `position` (PKB's manual_seed of cp_rank,
// 10000 + tp_rank, ...): standard normal times `scale`, or exact values in exact mode.
inline void fill_attn_input(const ProblemConfig& c, int problem_id, int position, int tensor, Tensor& t,
                            double scale = 1.0) {
    const CounterRng rng = input_rng(c, problem_id, position, tensor);
    if (c.input_mode == InputMode::Exact) {
        fill_exact(t, rng, 2);
    } else {
        fill_normal(t, rng, scale);
    }
}

// torch.linspace(start, end, steps)[i] as its kernel computes it (the first half from start, the second
// from end); 74 and 75 build theirs in bf16 (the caller's tensor rounds).
inline double torch_linspace(double start, double end, std::int64_t steps, std::int64_t i) {
    const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
    return i < steps / 2 ? start + step * static_cast<double>(i)
                         : end - step * static_cast<double>(steps - 1 - i);
}

} // namespace pkbw::problems
