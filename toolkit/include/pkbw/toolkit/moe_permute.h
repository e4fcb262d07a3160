// MoE token routing bookkeeping shared by the device references (moe_permute.cuh), the host oracles
// (moe_permute_host.h) and the input generators (moe_inputs.h): plain C++, no CUDA, no core.
//
// PKB's MoE dispatch (problems 28, 29, 31, 32, 49-51; Megatron's token dispatcher) moves rows in
// three steps whose index arithmetic lives here, once:
//
// 1. Expert-major permutation. `routing_map` is [E, T] (expert e routes token t when the entry is
//    non-zero); `token_indices.masked_select(routing_map)` lists, expert by expert and tokens
//    ascending within an expert, the token of every routed (e, t) pair: `expert_major_indices`.
// 2. Chunk regroup (`_sort_chunks_by_idxs`): split the rows by a list of sizes and concatenate the
//    chunks in a given order: `sort_chunks_plan` turns (sizes, order) into row copies. After the
//    dispatch all-to-all a rank holds, per source rank w, its L = E/W local experts' rows
//    (chunk w·L + l); `local_expert_major_order` regroups them expert by expert (chunk l·W + w first
//    by l), and `rank_major_order` is the way back (chunks indexed l·W + w, output by w then l).
// 3. The weighted scatter-add unpermute (combine) is in moe_permute.cuh / moe_permute_host.h.
//
//     std::vector<ChunkCopy> plan;
//     std::string err = sort_chunks_plan(counts /*[W, L] row-major*/, local_expert_major_order(E, W),
//                                        received_rows, plan);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pkbw::tk {

// One contiguous block of rows: destination rows [dst_row, dst_row + rows) are source rows
// [src_row, src_row + rows).
struct ChunkCopy {
    long long src_row = 0;
    long long dst_row = 0;
    long long rows = 0;
};

// PKB's `_sort_chunks_by_idxs(input, split_sizes, order)`: chunk i of the input is split_sizes[i]
// rows (in order, from row 0); the output is chunks order[0], order[1], ... concatenated. Fills
// `plan` (chunks of zero rows are left out) and returns "" or why the arguments are invalid, as
// torch.split and indexing would refuse them: a negative size, sizes not summing to total_rows, an
// order entry outside the chunks. `order` need not be a permutation (torch.cat takes any list).
inline std::string sort_chunks_plan(const std::vector<long long>& split_sizes, const std::vector<int>& order,
                                    long long total_rows, std::vector<ChunkCopy>& plan) {
    plan.clear();
    std::vector<long long> starts(split_sizes.size());
    long long sum = 0;
    for (std::size_t i = 0; i < split_sizes.size(); ++i) {
        if (split_sizes[i] < 0)
            return "split size " + std::to_string(i) + " is negative (" + std::to_string(split_sizes[i]) +
                   ")";
        starts[i] = sum;
        sum += split_sizes[i];
    }
    if (sum != total_rows)
        return "split sizes sum to " + std::to_string(sum) + " but the input has " +
               std::to_string(total_rows) + " rows";
    long long at = 0;
    for (std::size_t j = 0; j < order.size(); ++j) {
        const int c = order[j];
        if (c < 0 || static_cast<std::size_t>(c) >= split_sizes.size())
            return "chunk order entry " + std::to_string(j) + " is " + std::to_string(c) + ", outside the " +
                   std::to_string(split_sizes.size()) + " chunks";
        if (split_sizes[c] > 0)
            plan.push_back({starts[c], at, split_sizes[c]});
        at += split_sizes[c];
    }
    return "";
}

// Rows the plan writes (the output's length).
inline long long planned_rows(const std::vector<ChunkCopy>& plan) {
    long long rows = 0;
    for (const ChunkCopy& c : plan)
        rows += c.rows;
    return rows;
}

// PKB 28/31's `permute_order = arange(E).reshape(-1, L).T.ravel()` with L = E / ranks: chunks indexed
// w·L + l (source rank w, local expert l) come out ordered by local expert, then source rank.
// `experts` must be a multiple of `ranks` (the caller checks; PKB asserts it).
inline std::vector<int> local_expert_major_order(int experts, int ranks) {
    const int local = experts / ranks;
    std::vector<int> order;
    order.reserve(static_cast<std::size_t>(experts));
    for (int l = 0; l < local; ++l)
        for (int w = 0; w < ranks; ++w)
            order.push_back(w * local + l);
    return order;
}

// PKB 29/31's `unpermute_order = arange(E).reshape(L, -1).T.ravel()`: chunks indexed l·W + w (split
// by the transposed counts) come back ordered by source rank, then local expert. The inverse of
// local_expert_major_order.
inline std::vector<int> rank_major_order(int experts, int ranks) {
    const int local = experts / ranks;
    std::vector<int> order;
    order.reserve(static_cast<std::size_t>(experts));
    for (int w = 0; w < ranks; ++w)
        for (int l = 0; l < local; ++l)
            order.push_back(l * ranks + w);
    return order;
}

// counts [rows, cols] row-major -> counts.T.ravel() ([cols, rows] row-major): 29's split sizes from
// num_global_tokens_per_local_expert [W, L].
inline std::vector<long long> transposed(const std::vector<long long>& counts, long long rows,
                                         long long cols) {
    std::vector<long long> out(counts.size());
    for (long long r = 0; r < rows; ++r)
        for (long long c = 0; c < cols; ++c)
            out[static_cast<std::size_t>(c * rows + r)] = counts[static_cast<std::size_t>(r * cols + c)];
    return out;
}

// The expert-major permutation of a routing map given as "is (e, t) routed" for e < experts,
// t < tokens: `sorted_indices` is masked_select's token list, `row_experts` the expert of each of
// its rows, `counts` the rows per expert (expert e's rows start at the sum of counts before it).
struct ExpertMajorPermutation {
    std::vector<long long> sorted_indices;
    std::vector<int> row_experts;
    std::vector<long long> counts;
    long long rows() const { return static_cast<long long>(sorted_indices.size()); }
};

template <class Routed>
ExpertMajorPermutation expert_major_permutation_of(long long experts, long long tokens, Routed&& routed) {
    ExpertMajorPermutation p;
    p.counts.assign(static_cast<std::size_t>(experts), 0);
    for (long long e = 0; e < experts; ++e)
        for (long long t = 0; t < tokens; ++t)
            if (routed(e, t)) {
                p.sorted_indices.push_back(t);
                p.row_experts.push_back(static_cast<int>(e));
                ++p.counts[static_cast<std::size_t>(e)];
            }
    return p;
}

// masked_select's token list of a routing map stored [experts, tokens] row-major (any element type;
// non-zero = routed, as `.bool()`).
template <class T>
std::vector<long long> expert_major_indices(const std::vector<T>& routing_map, long long experts,
                                            long long tokens) {
    return expert_major_permutation_of(experts, tokens,
                                       [&](long long e, long long t) {
                                           return routing_map[static_cast<std::size_t>(e * tokens + t)] !=
                                                  T{};
                                       })
        .sorted_indices;
}

} // namespace pkbw::tk
