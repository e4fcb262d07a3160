// The heatmaps' data, without widgets: a tensor pair pooled into the four maps by core's pass, the
// maps of a stored comparison alone, the value maps' shared colour range and the tie-row bands.
#include "heatmapview.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pkbw::app {

HeatmapSet compute_heatmaps(const Tensor& ref, const Tensor& cand, double atol, double rtol, int max_side) {
    HeatmapSet s;
    s.has_values = true;
    s.atol = atol;
    s.rtol = rtol;
    // One pass reads each tensor once: the ratio, both value maps and the signed difference.
    s.error = analyse_error(ref, cand, atol, rtol, max_side, &s.ref, &s.cand);
    s.ref_tensor = ref;
    s.cand_tensor = cand;
    return s;
}

std::pair<double, double> shared_value_range(const PooledMap& a, const PooledMap& b, bool* diverging) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const PooledMap* m : {&a, &b}) {
        for (float v : m->values) {
            if (std::isfinite(v)) {
                lo = std::min(lo, static_cast<double>(v));
                hi = std::max(hi, static_cast<double>(v));
            }
        }
    }
    if (lo > hi) {
        *diverging = false;
        return {0, 0};
    }
    *diverging = lo < 0 && hi > 0;
    if (*diverging) {
        const double m = std::max(-lo, hi);
        return {-m, m};
    }
    if (lo == hi) { // constant: centre it on a small range of its own
        const double pad = lo == 0 ? 1.0 : std::fabs(lo) * 0.5;
        return {lo - pad, hi + pad};
    }
    return {lo, hi};
}

std::vector<TieBand> tie_bands(const TieRows& ties, const Shape& shape, std::size_t max_bands,
                               bool* truncated) {
    std::vector<TieBand> bands;
    if (truncated) {
        *truncated = false;
    }
    const std::int64_t dim0 = shape.empty() ? 1 : shape[0];
    const Grid2D grid = grid_of(shape);
    // View rows per dim-0 row (N-d); a 1-D tensor's rows are the columns of its one view row.
    const bool one_d = shape.size() == 1;
    const std::int64_t per_row = one_d || dim0 <= 0 ? 1 : grid.rows / dim0;
    auto band_of = [&](std::int64_t first, std::int64_t last) { // dim-0 rows [first, last]
        if (one_d) {
            return TieBand{static_cast<double>(first), static_cast<double>(last + 1), 0.0, 1.0};
        }
        return TieBand{0.0, static_cast<double>(grid.cols), static_cast<double>(first * per_row),
                       static_cast<double>((last + 1) * per_row)};
    };
    const std::vector<std::int64_t>& rows = ties.rows;
    for (std::size_t i = 0; i < rows.size();) {
        if (rows[i] < 0 || rows[i] >= dim0) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j + 1 < rows.size() && rows[j + 1] == rows[j] + 1 && rows[j + 1] < dim0) {
            ++j;
        }
        if (bands.size() == max_bands) {
            if (truncated) {
                *truncated = true;
            }
            break;
        }
        bands.push_back(band_of(rows[i], rows[j]));
        i = j + 1;
    }
    return bands;
}

HeatmapSet heatmaps_from_row(const TensorResultRow& row, double atol, double rtol) {
    HeatmapSet s;
    s.title = row.name;
    s.ties = row.ties;
    s.shape = row.ref_shape;
    s.length_bound = row.length_bound;
    s.ref_length = row.ref_length;
    s.cand_length = row.cand_length;
    s.atol = atol;
    s.rtol = rtol;
    s.error.numel = row.numel;
    s.error.mismatch_count = row.mismatch_count;
    s.error.first_mismatch = row.first_mismatch;
    s.error.worst_mismatch = row.worst_mismatch;
    s.error.worst_ratio = row.worst_ratio;
    PooledMap& m = s.error.ratio;
    m.source_rows = row.error_map.source_rows;
    m.source_cols = row.error_map.source_cols;
    m.rows = row.error_map.rows;
    m.cols = row.error_map.cols;
    m.values = row.error_map.ratio;
    for (float& v : m.values) {
        if (std::isinf(v)) {
            v = std::numeric_limits<float>::quiet_NaN();
        }
    }
    return s;
}

} // namespace pkbw::app
