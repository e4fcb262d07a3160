// Host (float64) equivalent of moe_router.cuh: PKB's MoE router with torch's roundings to the dtype.
//
//     logits = r(x·Wᵀ + b)                  (the exact product, rounded once, as cuBLAS's fp32 sum + bias)
//     probs  = r(softmax(logits))           (softmax in double, rounded once; torch: fp32, rounded once)
//     top-k of probs by moe_router.h's rule (ties: lower expert index), weights = the chosen probs
//
// The rounded probabilities decide which experts a token goes to, so they are kept (probs) for the
// tie detection of the problems (router_tie_rows). The oracle and the descriptors both call this.
#pragma once

#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/moe_router.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace pkbw::tk {

struct RouterHost {
    std::int64_t tokens = 0;
    int experts = 0, top_k = 0;
    std::vector<double> probs;       // [tokens, experts], rounded to the dtype
    std::vector<double> weights;     // [tokens, top_k], the chosen probabilities
    std::vector<long long> selected; // [tokens, top_k], expert ids in descending probability
    std::vector<long long> counts;   // [experts]: tokens routed to each expert
};

// x [tokens, hidden], weight [experts, hidden], bias [experts] (empty: none), as double.
inline RouterHost moe_router_f64(DType dtype, const std::vector<double>& x, const std::vector<double>& weight,
                                 const std::vector<double>& bias, std::int64_t tokens, std::int64_t hidden,
                                 int experts, int top_k) {
    RouterHost r;
    r.tokens = tokens;
    r.experts = experts;
    r.top_k = top_k;
    r.probs = gemm_rounded(x, weight, tokens, experts, hidden, dtype, false, true, bias);
    r.weights.resize(static_cast<std::size_t>(tokens * top_k));
    r.selected.resize(static_cast<std::size_t>(tokens * top_k));
    r.counts.assign(static_cast<std::size_t>(experts), 0);
    for (std::int64_t t = 0; t < tokens; ++t) {
        double* row = r.probs.data() + t * experts;
        const double top = *std::max_element(row, row + experts);
        double sum = 0;
        for (int e = 0; e < experts; ++e)
            sum += std::exp(row[e] - top);
        for (int e = 0; e < experts; ++e)
            row[e] = round_to(dtype, std::exp(row[e] - top) / sum);
        std::vector<int> chosen(static_cast<std::size_t>(top_k));
        router_top_k(row, experts, top_k, chosen.data());
        for (int s = 0; s < top_k; ++s) {
            r.selected[t * top_k + s] = chosen[s];
            r.weights[t * top_k + s] = row[chosen[s]];
            ++r.counts[chosen[s]];
        }
    }
    return r;
}

// The tokens whose output is decided by the tie rule (moe_router.h's router_is_tie_row with experts
// e / experts_per_owner on one rank), ascending.
inline std::vector<std::int64_t> router_tie_rows(const RouterHost& r, int experts_per_owner = 1) {
    std::vector<std::int64_t> rows;
    std::vector<int> chosen(static_cast<std::size_t>(r.top_k));
    for (std::int64_t t = 0; t < r.tokens; ++t) {
        for (int s = 0; s < r.top_k; ++s)
            chosen[s] = static_cast<int>(r.selected[t * r.top_k + s]);
        if (router_is_tie_row(r.probs.data() + t * r.experts, r.experts, r.top_k, chosen.data(),
                              experts_per_owner))
            rows.push_back(t);
    }
    return rows;
}

} // namespace pkbw::tk
