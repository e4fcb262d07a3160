// The error-map pass: downsampled views of an output pair for heatmaps, beside the comparison rule
// (compare.h) whose element verdict it applies, so that the GUI, the bench and the tests share one
// implementation (docs/comparison.md "Error maps for the GUI"). A tensor is seen as 2-D (leading dimensions
// folded into rows), the same view as pkbw::ErrorMap, and max-pooled to at most max_side cells on each side:
// pooling keeps the extreme value of each block, so a single bad element stays visible at any zoom.
#pragma once

#include "pkbw/core/tensor.h"

#include <array>
#include <cstdint>
#include <vector>

namespace pkbw::maps {

struct Grid2D {
    std::int64_t rows = 1, cols = 1; // the tensor's 2-D view
};
Grid2D grid_of(const Shape& shape);

struct PooledMap {
    std::int64_t source_rows = 0, source_cols = 0;
    int rows = 0, cols = 0;
    // rows * cols, row-major. NaN marks a masked cell: one holding a NaN or an infinity (values) or a
    // NaN/Inf mismatch (ratio), which no colour scale can place.
    std::vector<float> values;
    std::int64_t masked_elements = 0; // non-finite elements in the source

    float at(int row, int col) const { return values[static_cast<std::size_t>(row) * cols + col]; }
};

// Each cell keeps the element of largest magnitude (its sign kept).
PooledMap pool_values(const Tensor& tensor, int max_side);

// Histogram of log10(ratio) with fixed edges so that maps of different runs line up.
inline constexpr double kHistogramLog10Min = -8;
inline constexpr double kHistogramLog10Max = 4;
inline constexpr int kHistogramBins = 48;

struct ErrorAnalysis {
    PooledMap ratio; // |ref - cand| / (atol + rtol |cand|) per cell, max-pooled; > 1 fails
    // Per cell (the ratio map's geometry): the signed difference cand - ref of largest magnitude
    // (the positive one on a tie) and its magnitude, max |cand - ref|; NaN marks a cell holding a
    // non-finite difference (a NaN or an infinity on either side).
    // The heatmaps' signed-difference map is this one: no other pass reads the tensors for it.
    PooledMap diff, abs_diff; // masked_elements counts masked cells here
    // Per cell, row-major: failing elements; the element of largest ratio (the lowest logical index
    // on a tie; the cell's first element when every ratio is 0) and both sides' values there.
    std::vector<std::int64_t> cell_mismatches;
    std::vector<std::int64_t> cell_worst;
    std::vector<float> cell_worst_ref, cell_worst_cand;
    double max_abs_diff = 0;          // over elements whose difference is finite (compare.h's max_abs_error)
    std::int64_t max_diff_index = -1; // lowest logical index holding max_abs_diff; -1 when none is finite
    std::int64_t nonfinite_diffs = 0; // elements whose difference cand - ref is NaN or infinite
    std::int64_t numel = 0;
    std::int64_t mismatch_count = 0;
    std::int64_t first_mismatch = -1, worst_mismatch = -1; // logical indices, -1 when none
    double worst_ratio = 0;                                // +inf when a NaN/Inf mismatch exists
    std::array<std::int64_t, kHistogramBins> histogram{};  // finite ratios > 0, clamped into range
    std::int64_t exact_count = 0;                          // ratio == 0
    std::int64_t nonfinite_mismatches = 0;                 // ratio +inf (NaN, or unequal infinities)
};

// PKB's element rule (pkbw/core/compare.h), applied as compare_tensors applies it: mismatch_count,
// first_mismatch, worst_mismatch and worst_ratio are compare_tensors' figures. Shapes must have the same
// element count; throws pkbw::Error otherwise. When `ref_values` / `cand_values` are given they receive
// pool_values() of each side from the same pass (one read of each tensor instead of two).
ErrorAnalysis analyse_error(const Tensor& ref, const Tensor& cand, double atol, double rtol, int max_side,
                            PooledMap* ref_values = nullptr, PooledMap* cand_values = nullptr);

// (row, col) of a logical index in the 2-D view, and the map cell holding it.
struct CellPos {
    std::int64_t row = 0, col = 0;
    int map_row = 0, map_col = 0;
};
CellPos locate(const PooledMap& map, std::int64_t linear_index);

} // namespace pkbw::maps
