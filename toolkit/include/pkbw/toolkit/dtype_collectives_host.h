// Host-oracle models of NCCL collectives on dtype data (pkbw reference toolkit).
//
// all_reduce_sum_rounded: the model of an NCCL SUM all-reduce (or reduce-scatter) in a floating dtype (pkbw
// reference toolkit): every rank's values, summed element-wise in rank order with a rounding to the
// dtype after each addition, as NCCL's dtype arithmetic rounds per step. (NCCL's order differs: the
// models agree to a unit in the last place per step.)
#pragma once

#include "pkbw/toolkit/host.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace pkbw::tk {

// Elements gathered from every rank at a time: the gathered copy is world x this many doubles, not
// world x the whole tensor (76's all-reduce at PKB's shape, 35.7 M elements a rank, gathered whole on
// each of 4 host ranks, needed 4.5 GB beside the problem's own memory).
inline constexpr std::size_t kRoundedSumChunk = std::size_t{1} << 20;

// Element-wise rounded sum over ranks of `values` (the same length everywhere); every rank calls it.
// With begin/count, only elements [begin, begin + count) are returned (a reduce-scatter's slice; the
// ranks' slices may differ, so every rank gathers every chunk). `chunk`: elements gathered at a time.
inline std::vector<double> all_reduce_sum_rounded(const Context& ctx, DType dtype,
                                                  const std::vector<double>& values, std::size_t begin = 0,
                                                  std::size_t count = static_cast<std::size_t>(-1),
                                                  std::size_t chunk = kRoundedSumChunk) {
    chunk = std::max<std::size_t>(chunk, 1);
    if (begin > values.size())
        begin = values.size();
    if (count > values.size() - begin)
        count = values.size() - begin;
    std::vector<double> out(count);
    for (std::size_t first = 0; first < values.size(); first += chunk) {
        const std::size_t n = std::min(chunk, values.size() - first);
        const std::vector<double> all =
            all_gather_f64(ctx, std::vector<double>(values.begin() + static_cast<std::ptrdiff_t>(first),
                                                    values.begin() + static_cast<std::ptrdiff_t>(first + n)));
        const std::size_t lo = std::max(first, begin), hi = std::min(first + n, begin + count);
        for (std::size_t i = lo; i < hi; ++i) {
            double sum = all[i - first];
            for (int r = 1; r < ctx.world_size; ++r)
                sum = round_to(dtype, sum + all[static_cast<std::size_t>(r) * n + (i - first)]);
            out[i - begin] = sum;
        }
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
