// Per-rank split lists (pkbw reference toolkit; host and CUDA references): the list params by which a
// problem gives an all-to-all's rows per peer (PKB's input_split_sizes / output_split_sizes,
// input_splits / output_splits), read with ctx.param_list.
#pragma once

#include "pkbw/solution.h"

#include <numeric>
#include <vector>

namespace pkbw::tk {

// The list param `name` as row counts, one per rank of ctx's world; empty when the param is missing or
// has another length (the caller fails naming the param).
inline std::vector<long long> rank_list(const Context& ctx, const char* name) {
    double values[kMaxRanks];
    const int length = ctx.param_list(name, values, kMaxRanks);
    if (length != ctx.world_size)
        return {};
    return std::vector<long long>(values, values + length);
}

// The rows a split list moves in all.
inline long long total_rows(const std::vector<long long>& splits) {
    return std::accumulate(splits.begin(), splits.end(), 0LL);
}

} // namespace pkbw::tk
