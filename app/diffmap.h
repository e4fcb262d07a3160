// The signed difference candidate - reference of two output tensors, pooled to the same cells as the
// error-ratio map (tensormaps.h: element i of an axis lies in cell i * cells / source), each cell
// keeping the difference of largest magnitude with its sign, so that a bias (all cells one sign) or a
// ramp shows where the value maps, scaled to the values themselves, cannot show it. Qt-free.
//
// Seam: this is a view-side pass of its own (one read of each tensor) so that it does not touch the
// error-map pooling, which moves into core; when core's pass offers a difference map this file goes.
#pragma once

#include "tensormaps.h"

#include <cstdint>

namespace pkbw::app {

struct DifferenceMap {
    PooledMap diff;                   // cand - ref; NaN marks a cell with a non-finite difference
    double max_abs_diff = 0;          // over finite differences
    std::int64_t max_diff_index = -1; // first element holding max_abs_diff, -1 when none is finite
    std::int64_t nonfinite = 0;       // elements whose difference is NaN or infinite
};

// Throws pkbw::Error when the element counts differ.
DifferenceMap difference_map(const Tensor& ref, const Tensor& cand, int max_side);

} // namespace pkbw::app
