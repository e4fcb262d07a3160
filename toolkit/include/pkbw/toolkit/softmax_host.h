// Row softmax in float64 rounded once to a dtype: torch's softmax of a D tensor (fp32 inside, stored
// in D) as the host oracles model it. Shared by an oracle and its descriptor's tie detection (problem
// 24), which must see the same rounded probabilities to agree on which tokens tie.
#pragma once

#include "pkbw/toolkit/host.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace pkbw::tk {

// softmax over each row of x [rows, n] (exp(x - max) / Σ exp(x - max) in double), each element rounded
// to dtype (F64: no rounding).
inline std::vector<double> softmax_rows_rounded_f64(DType dtype, const std::vector<double>& x,
                                                    std::int64_t rows, std::int64_t n) {
    std::vector<double> p(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
        const double* row = x.data() + r * n;
        const double top = *std::max_element(row, row + n);
        double sum = 0;
        for (std::int64_t j = 0; j < n; ++j)
            sum += std::exp(row[j] - top);
        for (std::int64_t j = 0; j < n; ++j)
            p[static_cast<std::size_t>(r * n + j)] = round_to(dtype, std::exp(row[j] - top) / sum);
    }
    return p;
}

} // namespace pkbw::tk
