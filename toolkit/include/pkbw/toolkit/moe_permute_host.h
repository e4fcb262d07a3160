// MoE dispatch and combine on the host for oracles (pkbw reference toolkit): the float64 twins of
// moe_permute.cuh. Index arithmetic is moe_permute.h's, so both sides move the same rows.
//
//     const auto perm = pkbw::tk::expert_major_permutation_host(to_f64(routing_map), E, T);
//     auto permuted = pkbw::tk::gather_rows_host(hidden, N, perm.sorted_indices);
//     auto regrouped = pkbw::tk::sort_chunks_host(received, N, plan);
//     std::string err;
//     auto dense = pkbw::tk::dense_routing_weights_host(weights, selected, T, k, E, D, err);
//     auto w = pkbw::tk::permuted_row_weights_host(dense, perm, E);
//     auto out = pkbw::tk::unpermute_scatter_add_host(rows, w, perm.sorted_indices, T, N, D, err);
//
// Rounding. PKB's combine is eager PyTorch in the problem's dtype D: `scatter_add_` of the routing
// weights into a D tensor of zeros, `tokens * weight` stored in D, then `scatter_add_` of those rows
// into D zeros. The functions here round to D after each of those operations (round_to), in the
// order the CPU kernels add (rows ascending). On CUDA, PKB's scatter_add uses atomics in D, whose
// order is unspecified; with at most two contributions per output (top-2 with distinct experts:
// 0 + a + b) every order gives the same result, so PKB's problems are deterministic at k = 2.
#pragma once

#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/moe_permute.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace pkbw::tk {

// The expert-major permutation of a routing map [experts, tokens] (non-zero = routed).
inline ExpertMajorPermutation expert_major_permutation_host(const std::vector<double>& routing_map,
                                                            long long experts, long long tokens) {
    return expert_major_permutation_of(experts, tokens, [&](long long e, long long t) {
        return routing_map[static_cast<std::size_t>(e * tokens + t)] != 0.0;
    });
}

// out row i = rows[ids[i]] (rows of row_len values): `tokens.index_select(0, sorted_indices)`.
// The caller checks ids against the table (expert_major_permutation_host's are always in range).
template <class T>
std::vector<T> gather_rows_host(const std::vector<T>& rows, long long row_len,
                                const std::vector<long long>& ids) {
    std::vector<T> out(ids.size() * static_cast<std::size_t>(row_len));
    for (std::size_t i = 0; i < ids.size(); ++i)
        std::copy_n(rows.begin() + ids[i] * row_len, row_len,
                    out.begin() + static_cast<long long>(i) * row_len);
    return out;
}

// Rows copied by a sort_chunks_plan (rows of row_len values): the output has planned_rows(plan) rows.
template <class T>
std::vector<T> sort_chunks_host(const std::vector<T>& rows, long long row_len,
                                const std::vector<ChunkCopy>& plan) {
    std::vector<T> out(static_cast<std::size_t>(planned_rows(plan) * row_len));
    for (const ChunkCopy& c : plan)
        std::copy_n(rows.begin() + c.src_row * row_len, c.rows * row_len, out.begin() + c.dst_row * row_len);
    return out;
}

// PKB's `_generate_weights_idx`: zeros [tokens, experts] in D, then `scatter_add_(1, selected, weights)`
// (weights and selected [tokens, topk]; each add rounded to D, k ascending). An expert index outside
// [0, experts) sets `error` (torch raises) and returns an empty vector.
inline std::vector<double> dense_routing_weights_host(const std::vector<double>& weights,
                                                      const std::vector<long long>& selected,
                                                      long long tokens, long long topk, long long experts,
                                                      DType dtype, std::string& error) {
    std::vector<double> dense(static_cast<std::size_t>(tokens * experts), 0.0);
    for (long long t = 0; t < tokens; ++t)
        for (long long j = 0; j < topk; ++j) {
            const long long e = selected[static_cast<std::size_t>(t * topk + j)];
            if (e < 0 || e >= experts) {
                error = "selected expert " + std::to_string(e) + " of token " + std::to_string(t) +
                        " is outside [0, " + std::to_string(experts) + ")";
                return {};
            }
            double& slot = dense[static_cast<std::size_t>(t * experts + e)];
            slot = round_to(dtype, slot + weights[static_cast<std::size_t>(t * topk + j)]);
        }
    return dense;
}

// `dense.T.masked_select(routing_map)`: the weight of every permuted row, dense[token, expert of the
// row] (dense is [tokens, experts]).
inline std::vector<double> permuted_row_weights_host(const std::vector<double>& dense,
                                                     const ExpertMajorPermutation& perm, long long experts) {
    std::vector<double> w(perm.sorted_indices.size());
    for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = dense[static_cast<std::size_t>(perm.sorted_indices[i] * experts + perm.row_experts[i])];
    return w;
}

// PKB's `_unpermute` combine: out = zeros [tokens, n] in D; row i of `rows` ([targets.size(), n]),
// multiplied by row_weights[i] (rounded to D; no weights when row_weights is empty), is added into
// out row targets[i], rounding to D after each add, rows ascending. A target outside [0, tokens)
// sets `error` (torch's scatter_add raises) and returns an empty vector. dtype F64 rounds nothing.
inline std::vector<double> unpermute_scatter_add_host(const std::vector<double>& rows,
                                                      const std::vector<double>& row_weights,
                                                      const std::vector<long long>& targets, long long tokens,
                                                      long long n, DType dtype, std::string& error) {
    std::vector<double> out(static_cast<std::size_t>(tokens * n), 0.0);
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const long long t = targets[i];
        if (t < 0 || t >= tokens) {
            error = "permuted row " + std::to_string(i) + " maps to token " + std::to_string(t) +
                    ", outside [0, " + std::to_string(tokens) + ")";
            return {};
        }
        const double w = row_weights.empty() ? 1.0 : row_weights[i];
        for (long long c = 0; c < n; ++c) {
            double v = rows[i * n + c];
            if (!row_weights.empty())
                v = round_to(dtype, v * w);
            double& slot = out[static_cast<std::size_t>(t * n + c)];
            slot = round_to(dtype, slot + v);
        }
    }
    return out;
}

// Bytes of a host tensor regrouped by a plan (any dtype; rows of row_bytes): for integer outputs
// and for moving D data without a double round trip.
inline void sort_chunks_bytes_host(const void* src, std::size_t row_bytes, const std::vector<ChunkCopy>& plan,
                                   void* dst) {
    for (const ChunkCopy& c : plan)
        std::memcpy(static_cast<char*>(dst) + c.dst_row * row_bytes,
                    static_cast<const char*>(src) + c.src_row * row_bytes, c.rows * row_bytes);
}

} // namespace pkbw::tk
