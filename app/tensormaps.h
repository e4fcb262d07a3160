// Downsampled views of output tensors for heatmaps. The pass itself is core's (pkbw/core/compare_maps.h,
// beside the comparison rule it applies); this header keeps the names the views and their tests use.
#pragma once

#include "pkbw/core/compare_maps.h"

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

} // namespace pkbw::app
