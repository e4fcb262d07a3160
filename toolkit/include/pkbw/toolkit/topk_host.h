// Host (float64) equivalent of topk.cuh: the top-k / top-p row filter of PKB 82-84
// (`_apply_top_k_top_p`), one row at a time.
//
// The rule and its tie order are described in topk_rule.h.
#pragma once

#include "pkbw/solution.h"
#include "pkbw/toolkit/host.h"
#include "pkbw/toolkit/topk_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace pkbw::tk {

// Filters row[0..n) (values representable in dtype d) in place; keep (nullable) gets 1/0 per element.
inline void top_k_top_p_row_f64(DType d, const TopKTopP& f, double* row, std::int64_t n,
                                unsigned char* keep) {
    const double minus_inf = -std::numeric_limits<double>::infinity();
    std::vector<unsigned char> kept(static_cast<std::size_t>(n), 1);
    if (f.need_k() || f.need_p()) {
        std::vector<std::int64_t> order(static_cast<std::size_t>(n));
        std::iota(order.begin(), order.end(), std::int64_t{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](std::int64_t a, std::int64_t b) { return row[a] < row[b]; });
        std::vector<double> sorted(static_cast<std::size_t>(n));
        for (std::int64_t s = 0; s < n; ++s) {
            sorted[s] = row[order[s]];
        }
        if (f.need_k()) {
            const std::int64_t k = std::min<std::int64_t>(f.top_k, n);
            const double threshold = sorted[n - k];
            for (std::int64_t s = 0; s < n; ++s) {
                if (sorted[s] < threshold) {
                    kept[order[s]] = 0;
                    sorted[s] = minus_inf;
                }
            }
        }
        if (f.need_p()) {
            const double top = sorted[n - 1]; // the largest, never masked
            double sum = 0;
            for (std::int64_t s = 0; s < n; ++s) {
                sum += std::exp(sorted[s] - top);
            }
            const double bound = static_cast<float>(1.0 - f.top_p); // torch compares in fp32 on CUDA
            double prefix = 0;
            for (std::int64_t s = 0; s < n; ++s) {
                prefix += round_to(d, std::exp(sorted[s] - top) / sum);
                if (s != n - 1 && !(round_to(d, prefix) > bound)) {
                    kept[order[s]] = 0;
                }
            }
        }
    }
    for (std::int64_t j = 0; j < n; ++j) {
        if (!kept[j]) {
            row[j] = minus_inf;
        }
        if (keep) {
            keep[j] = kept[j];
        }
    }
}

// Filters rows × n values (row-major) and returns them; keep (nullable) is resized to rows × n.
inline std::vector<double> top_k_top_p_f64(DType d, const TopKTopP& f, std::vector<double> x,
                                           std::int64_t rows, std::int64_t n,
                                           std::vector<unsigned char>* keep = nullptr) {
    if (keep) {
        keep->assign(static_cast<std::size_t>(rows * n), 1);
    }
    for (std::int64_t r = 0; r < rows; ++r) {
        top_k_top_p_row_f64(d, f, x.data() + r * n, n, keep ? keep->data() + r * n : nullptr);
    }
    return x;
}

} // namespace pkbw::tk
