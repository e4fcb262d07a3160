// Structured MoE inputs for problem descriptors (pkbw reference toolkit, PKB's generators of
// problems 26, 28, 29, 31, 32, 49-51; note G5 of /work/shared/reference/pkb-problems-21-87.md).
// Host-only plain C++, templated on the generator so that it needs no library: `Rng` is any type
// with `double uniform(uint64 index, double lo, double hi)`, `double normal(uint64 index)` and
// `int64 integer(uint64 index, int64 lo, int64 hi)` (pkbw::CounterRng, from problem_util.h's
// input_rng). Draws are indexed, so every value is a pure function of (seed, stream, index).
//
//     const auto choices = tk::distinct_expert_choices(input_rng(c, 28, rank, 1), M, 2, 8);
//     const auto mask = tk::one_hot_expert_mask(choices, M, 2, 8);   // [E, k, M] as PKB's expert_mask
//     const auto routing = tk::consistent_routing(input_rng(c, 29, rank, 1), M, 2, 8, round_to_D);
//
// The values are not PyTorch's (torch's Philox stream cannot be reproduced outside torch); the
// structure and the distributions are.
#pragma once

#include "pkbw/toolkit/moe_permute.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace pkbw::tk {

// nn.Linear's default initialisation: weight [out, in] by kaiming_uniform_(a = sqrt(5)), i.e.
// U(-b, b) with b = gain·sqrt(3/fan_in), gain = sqrt(2 / (1 + 5)) = 1/sqrt(3), so b = 1/sqrt(fan_in);
// bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)) too (fan_in = in_features; 0 when fan_in is 0). PKB builds
// the module in fp32 and casts it to the dtype: store the draws in D (one rounding).
inline double linear_init_bound(long long fan_in) {
    return fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
}

// Uniform draws in [-linear_init_bound(fan_in), +bound): nn.Linear's weight (count = out·in) or bias
// (count = out) from one stream.
template <class Rng>
std::vector<double> linear_init_values(const Rng& rng, long long count, long long fan_in) {
    const double b = linear_init_bound(fan_in);
    std::vector<double> v(static_cast<std::size_t>(count));
    for (long long i = 0; i < count; ++i)
        v[static_cast<std::size_t>(i)] = rng.uniform(static_cast<std::uint64_t>(i), -b, b);
    return v;
}

// Problem 26's choices: selected [tokens, topk], every entry uniform in [0, experts)
// (torch.randint), so a token may pick the same expert twice.
template <class Rng>
std::vector<long long> random_expert_choices(const Rng& rng, long long tokens, long long topk,
                                             long long experts) {
    std::vector<long long> s(static_cast<std::size_t>(tokens * topk));
    for (std::size_t i = 0; i < s.size(); ++i)
        s[i] = rng.integer(i, 0, experts);
    return s;
}

// Problems 28/29's choices: per token the first topk entries of a uniform random permutation of the
// experts (torch.randperm(E)[:k]): topk distinct experts in random order (partial Fisher-Yates, draws
// at index token·experts + j). topk must not exceed experts.
template <class Rng>
std::vector<long long> distinct_expert_choices(const Rng& rng, long long tokens, long long topk,
                                               long long experts) {
    std::vector<long long> s(static_cast<std::size_t>(tokens * topk));
    std::vector<long long> deck(static_cast<std::size_t>(experts));
    for (long long t = 0; t < tokens; ++t) {
        for (long long e = 0; e < experts; ++e)
            deck[static_cast<std::size_t>(e)] = e;
        for (long long j = 0; j < topk; ++j) {
            const auto pick = static_cast<std::size_t>(
                rng.integer(static_cast<std::uint64_t>(t * experts + j), j, experts));
            std::swap(deck[static_cast<std::size_t>(j)], deck[pick]);
            s[static_cast<std::size_t>(t * topk + j)] = deck[static_cast<std::size_t>(j)];
        }
    }
    return s;
}

// PKB's `one_hot(selected, E).permute(2, 1, 0)`: mask [experts, topk, tokens], 1 where choice j of
// token t is expert e (as double: store it in the mask tensor's dtype, float32 in 26/28).
inline std::vector<double> one_hot_expert_mask(const std::vector<long long>& selected, long long tokens,
                                               long long topk, long long experts) {
    std::vector<double> mask(static_cast<std::size_t>(experts * topk * tokens), 0.0);
    for (long long t = 0; t < tokens; ++t)
        for (long long j = 0; j < topk; ++j) {
            const long long e = selected[static_cast<std::size_t>(t * topk + j)];
            mask[static_cast<std::size_t>((e * topk + j) * tokens + t)] = 1.0;
        }
    return mask;
}

// routing_map [experts, tokens] (1 = routed) of a choice list: `mask.sum(dim=1) > 0`.
inline std::vector<unsigned char> routing_map_of(const std::vector<long long>& selected, long long tokens,
                                                 long long topk, long long experts) {
    std::vector<unsigned char> map(static_cast<std::size_t>(experts * tokens), 0);
    for (long long t = 0; t < tokens; ++t)
        for (long long j = 0; j < topk; ++j)
            map[static_cast<std::size_t>(selected[static_cast<std::size_t>(t * topk + j)] * tokens + t)] = 1;
    return map;
}

// PKB's even split lists: total // parts each, the remainder added to the last part (27, 28, 29's
// input_splits and output_splits).
inline std::vector<long long> equal_splits(long long total, long long parts) {
    std::vector<long long> s(static_cast<std::size_t>(parts), parts > 0 ? total / parts : 0);
    if (parts > 0)
        s.back() += total % parts;
    return s;
}

// PKB 28/29's synthetic num_global_tokens_per_local_expert: total spread over `slots` counts,
// total // slots each, one more for the first total % slots.
inline std::vector<long long> spread_counts(long long total, long long slots) {
    std::vector<long long> s(static_cast<std::size_t>(slots), slots > 0 ? total / slots : 0);
    for (long long i = 0; slots > 0 && i < total % slots; ++i)
        ++s[static_cast<std::size_t>(i)];
    return s;
}

// Problem 29's routing, consistent across its tensors: per token topk distinct experts
// (distinct_expert_choices at stream index 0..), routing_map [E, T], selected [T, topk] = the
// token's experts ascending (torch.where over the map's column), weights [T, topk] = softmax of topk
// normal draws that are first rounded to D (`torch.randn(k, dtype).softmax(0)`; `round` maps a double
// to D and back), and permutation = the map's expert-major token list (masked_select order).
// The weights are left unrounded: storing them in the D tensor is the softmax's one rounding.
struct ConsistentRouting {
    std::vector<unsigned char> routing_map;
    std::vector<long long> selected;
    std::vector<double> weights;
    std::vector<long long> permutation;
};

template <class Rng, class Round>
ConsistentRouting consistent_routing(const Rng& choice_rng, const Rng& weight_rng, long long tokens,
                                     long long topk, long long experts, Round&& round) {
    ConsistentRouting r;
    const std::vector<long long> choices = distinct_expert_choices(choice_rng, tokens, topk, experts);
    r.routing_map = routing_map_of(choices, tokens, topk, experts);
    r.selected.reserve(static_cast<std::size_t>(tokens * topk));
    r.weights.resize(static_cast<std::size_t>(tokens * topk));
    std::vector<double> logits(static_cast<std::size_t>(topk));
    for (long long t = 0; t < tokens; ++t) {
        for (long long e = 0; e < experts; ++e)
            if (r.routing_map[static_cast<std::size_t>(e * tokens + t)])
                r.selected.push_back(e);
        double top = -INFINITY, sum = 0.0;
        const long long k = topk;
        for (long long j = 0; j < k; ++j) {
            logits[j] = round(weight_rng.normal(static_cast<std::uint64_t>(t * topk + j)));
            top = logits[j] > top ? logits[j] : top;
        }
        for (long long j = 0; j < k; ++j)
            sum += std::exp(logits[j] - top);
        for (long long j = 0; j < k; ++j)
            r.weights[static_cast<std::size_t>(t * topk + j)] = std::exp(logits[j] - top) / sum;
    }
    r.permutation = expert_major_indices(r.routing_map, experts, tokens);
    return r;
}

} // namespace pkbw::tk
