// Top-k with labels on the host (pkbw reference toolkit): 79's torch.topk(sims, k, sorted=True) and the
// gather of the labels at the chosen columns, with sort_host.h's segmented_topk (ties: the lower column
// first), and the tie rows that rule decides.
//
// 79 takes a top-k per rank and then a top-k of the ranks' candidates concatenated in rank order; with the
// lower column first among equal values both steps together equal one top-k over all ranks' columns in
// rank order (a value in the global top-k is in its rank's top-k by the same order), so the tie rule is
// "the lower global train index first". A row is a tie row when two equal values with different labels
// are adjacent among the first k + 1 of its sorted row: which label comes first, or which one is kept at
// the k-th place, is then the rule's choice (torch.topk documents none).
#pragma once

#include "pkbw/toolkit/sort_host.h"

#include <vector>

namespace pkbw::tk {

struct LabelledTopk {
    std::vector<double> values;    // [rows, k], descending per row
    std::vector<long long> labels; // [rows, k]
};

// values [rows, width]; labels [width] (shared by every row) or [rows, width].
inline LabelledTopk labelled_topk_f64(const std::vector<double>& values, const std::vector<long long>& labels,
                                      long long rows, long long width, long long k) {
    const bool shared = static_cast<long long>(labels.size()) == width;
    const std::vector<long long> chosen = segmented_topk(values.data(), rows, width, k);
    LabelledTopk out;
    for (long long r = 0; r < rows; ++r) {
        for (long long i = 0; i < k; ++i) {
            const long long column = chosen[static_cast<std::size_t>(r * k + i)];
            out.values.push_back(values[static_cast<std::size_t>(r * width + column)]);
            out.labels.push_back(labels[static_cast<std::size_t>(shared ? column : r * width + column)]);
        }
    }
    return out;
}

// The rows of values [rows, width] (labels as above) whose top-k depends on the tie rule.
inline std::vector<long long> labelled_tie_rows(const std::vector<double>& values,
                                                const std::vector<long long>& labels, long long rows,
                                                long long width, long long k) {
    const long long kept = k < width ? k + 1 : width;
    const LabelledTopk top = labelled_topk_f64(values, labels, rows, width, kept);
    std::vector<long long> tie_rows;
    for (long long r = 0; r < rows; ++r) {
        for (long long i = 1; i < kept; ++i) {
            const std::size_t at = static_cast<std::size_t>(r * kept + i);
            if (top.values[at] == top.values[at - 1] && top.labels[at] != top.labels[at - 1]) {
                tie_rows.push_back(r);
                break;
            }
        }
    }
    return tie_rows;
}

} // namespace pkbw::tk
