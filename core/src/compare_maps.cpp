// The error-map pass's value maps (pool_values) and the 2-D view's geometry (grid_of, locate); the
// error analysis itself is in compare_maps_error.cpp, the shared band machinery in compare_maps_pass.h.
#include "pkbw/core/compare_maps.h"

#include "compare_maps_pass.h"

#include <algorithm>
#include <vector>

namespace pkbw::maps {

using namespace detail;

Grid2D grid_of(const Shape& shape) {
    Grid2D g;
    if (shape.empty()) {
        return g;
    }
    g.cols = shape.back();
    g.rows = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) {
        g.rows *= shape[i];
    }
    return g;
}

PooledMap pool_values(const Tensor& tensor, int max_side) {
    PooledMap m = empty_map(tensor, max_side);
    if (m.rows == 0 || m.cols == 0) {
        return m;
    }
    m.values.assign(static_cast<std::size_t>(m.rows) * m.cols, 0.0f);
    std::vector<float> magnitude(m.values.size(), -1.0f);
    const auto col_starts = cell_starts(m.source_cols, m.cols),
               row_starts = cell_starts(m.source_rows, m.rows);
    const Access access = access_of(tensor);
    std::vector<std::int64_t> masked(16, 0);
    for_row_bands(m, [&](int cell_begin, int cell_end, int thread) {
        Scratch scratch;
        const Band band = scratch.band();
        std::int64_t nonfinite = 0;
        for (int cr = cell_begin; cr < cell_end; ++cr) {
            const std::size_t base = static_cast<std::size_t>(cr) * m.cols;
            for (std::int64_t c0 = 0; c0 < m.source_cols; c0 += kChunk) {
                const int n = static_cast<int>(std::min<std::int64_t>(kChunk, m.source_cols - c0));
                scratch.reset_band(n);
                for (std::int64_t r = row_starts[cr]; r < row_starts[cr + 1]; ++r) {
                    const std::int64_t pos = r * m.source_cols + c0;
                    if (access == Access::F32) {
                        nonfinite +=
                            value_segment_f32(typed<float>(tensor, pos), n, band.ref_hi, band.ref_lo);
                    } else if (access == Access::Bf16) {
                        nonfinite += value_segment_bf16(typed<std::uint16_t>(tensor, pos), n, band.ref_hi,
                                                        band.ref_lo);
                    } else {
                        read_f32(tensor, pos, n, scratch.row_a());
                        nonfinite += value_segment_f32(scratch.row_a(), n, band.ref_hi, band.ref_lo);
                    }
                }
                RowFold{col_starts, c0, n}.values(band.ref_hi, band.ref_lo, m.values.data() + base,
                                                  magnitude.data() + base);
            }
        }
        masked[static_cast<std::size_t>(thread)] = nonfinite;
    });
    for (auto n : masked) {
        m.masked_elements += n;
    }
    return m;
}

CellPos locate(const PooledMap& map, std::int64_t linear_index) {
    CellPos p;
    if (map.source_cols <= 0 || map.source_rows <= 0 || linear_index < 0) {
        return p;
    }
    p.row = linear_index / map.source_cols;
    p.col = linear_index % map.source_cols;
    p.map_row = static_cast<int>(p.row * map.rows / map.source_rows);
    p.map_col = static_cast<int>(p.col * map.cols / map.source_cols);
    return p;
}

} // namespace pkbw::maps
