// Host-oracle models of NCCL collectives on dtype data (pkbw reference toolkit).
//
// all_reduce_sum_rounded: the model of an NCCL SUM all-reduce (or reduce-scatter) in a floating dtype (pkbw
// reference toolkit): every rank's values, summed element-wise in rank order with a rounding to the
// dtype after each addition, as NCCL's dtype arithmetic rounds per step. (NCCL's order differs: the
// models agree to a unit in the last place per step.)
#pragma once

#include "pkbw/toolkit/host.h"

#include <vector>

namespace pkbw::tk {

// Element-wise rounded sum over ranks of `values` (the same length everywhere); every rank calls it.
// With begin/count, only elements [begin, begin + count) are returned (a reduce-scatter's slice).
inline std::vector<double> all_reduce_sum_rounded(const Context& ctx, DType dtype,
                                                  const std::vector<double>& values, std::size_t begin = 0,
                                                  std::size_t count = static_cast<std::size_t>(-1)) {
    const std::vector<double> all = all_gather_f64(ctx, values);
    if (count > values.size() - begin)
        count = values.size() - begin;
    std::vector<double> out(count);
    for (std::size_t i = 0; i < count; ++i) {
        double sum = all[begin + i];
        for (int r = 1; r < ctx.world_size; ++r)
            sum = round_to(dtype, sum + all[r * values.size() + begin + i]);
        out[i] = sum;
    }
    return out;
}

// Rank `root`'s `values` on every rank (ncclBroadcast); every rank calls it with the same length.
inline std::vector<double> broadcast_f64(const Context& ctx, const std::vector<double>& values,
                                         int root = 0) {
    const std::vector<double> all = all_gather_f64(ctx, values);
    const auto begin = all.begin() + static_cast<std::ptrdiff_t>(values.size()) * root;
    return std::vector<double>(begin, begin + static_cast<std::ptrdiff_t>(values.size()));
}

} // namespace pkbw::tk
