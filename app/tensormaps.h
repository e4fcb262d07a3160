// Downsampled views of output tensors for heatmaps. The pass itself is core's (pkbw/core/compare_maps.h,
// beside the comparison rule it applies); this header keeps the names the views and their tests use.
#pragma once

#include "pkbw/core/compare_maps.h"

#include <cstdint>
#include <utility>

namespace pkbw::app {

using Grid2D = maps::Grid2D;
using PooledMap = maps::PooledMap;
using ErrorAnalysis = maps::ErrorAnalysis;
using CellPos = maps::CellPos;
using maps::kHistogramBins;
using maps::kHistogramLog10Max;
using maps::kHistogramLog10Min;

// The functions are core's own (using-declarations, not wrappers: a call found through ADL on a
// maps:: type and one through pkbw::app are then the same function, never an ambiguity).
// grid_of(shape); pool_values(tensor, max_side): each cell keeps the element of largest magnitude;
// analyse_error(ref, cand, atol, rtol, max_side, &ref_values, &cand_values): PKB's element rule per
// cell (ratio, signed difference, max |diff|, mismatch count, worst element and its values);
// locate(map, index): the (row, col) of a logical index and its map cell.
using maps::analyse_error;
using maps::grid_of;
using maps::locate;
using maps::pool_values;

// The signed difference map candidate - reference on its own: each cell keeps the difference of
// largest magnitude with its sign (a bias or a ramp the value maps cannot show). It is core's pass's
// (ErrorAnalysis::diff, beside the ratio, from the same read of each tensor), which is where the
// heatmaps read it; this is that part of the analysis under the names the views' tests use.
struct DifferenceMap {
    PooledMap diff;                   // NaN marks a cell with a non-finite difference
    double max_abs_diff = 0;          // over finite differences
    std::int64_t max_diff_index = -1; // first element holding max_abs_diff, -1 when none is finite
    std::int64_t nonfinite = 0;       // elements whose difference is NaN or infinite
};
inline DifferenceMap difference_map(const Tensor& ref, const Tensor& cand, int max_side) {
    ErrorAnalysis a = analyse_error(ref, cand, 0, 0, max_side);
    return {std::move(a.diff), a.max_abs_diff, a.max_diff_index, a.nonfinite_diffs};
}

} // namespace pkbw::app
