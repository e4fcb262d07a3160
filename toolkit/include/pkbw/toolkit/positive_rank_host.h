// PKB 69's ranks on the host (pkbw reference toolkit): the oracle's and the descriptor's tie rows' one
// loop over rows, with positive_rank.h's rule (sigmoid in double, rounded once to the dtype; the positive
// first among equal values).
#pragma once

#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/positive_rank.h"

#include <vector>

namespace pkbw::tk {

struct PositiveRanks {
    std::vector<long long> ranks; // per row: 1 + negatives strictly above the positive
    std::vector<long long> ties;  // per row: negatives equal to the positive (> 0: a tie row)
};

// pos [rows] and neg [rows, n] as doubles (values of `dtype`), the sigmoid rounded to `dtype`.
inline PositiveRanks positive_ranks_f64(DType dtype, const std::vector<double>& pos,
                                        const std::vector<double>& neg, long long n) {
    PositiveRanks out;
    std::vector<double> row(static_cast<std::size_t>(n));
    for (std::size_t r = 0; r < pos.size(); ++r) {
        for (long long j = 0; j < n; ++j) {
            row[static_cast<std::size_t>(j)] = round_to(
                dtype, sigmoid_f64(neg[r * static_cast<std::size_t>(n) + static_cast<std::size_t>(j)]));
        }
        const double positive = round_to(dtype, sigmoid_f64(pos[r]));
        out.ranks.push_back(positive_rank(positive, row.data(), n));
        out.ties.push_back(positive_ties(positive, row.data(), n));
    }
    return out;
}

} // namespace pkbw::tk
