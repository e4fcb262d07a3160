#include "tensormaps.h"

#include "pkbw/core/dtype.h"
#include "pkbw/core/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

namespace pkbw::app {
namespace {

// Converts `count` consecutive logical elements starting at `first` to f32. Contiguous f32/bf16/f16
// take a fast path: this loop is the whole cost of an 8192 x 8192 heatmap.
void read_row(const Tensor& t, std::int64_t first, std::int64_t count, float* out) {
    if (t.is_contiguous()) {
        const std::byte* base = t.data() + static_cast<std::size_t>(first) * dtype_size(t.dtype());
        switch (t.dtype()) {
        case DType::F32:
            std::memcpy(out, base, static_cast<std::size_t>(count) * sizeof(float));
            return;
        case DType::BF16:
            for (std::int64_t i = 0; i < count; ++i) {
                std::uint16_t half;
                std::memcpy(&half, base + 2 * i, 2);
                const std::uint32_t bits = static_cast<std::uint32_t>(half) << 16;
                std::memcpy(out + i, &bits, 4);
            }
            return;
        case DType::F16:
            for (std::int64_t i = 0; i < count; ++i) {
                std::uint16_t half;
                std::memcpy(&half, base + 2 * i, 2);
                out[i] = f16_to_f32(half);
            }
            return;
        default:
            for (std::int64_t i = 0; i < count; ++i) {
                out[i] =
                    element_to_f32(t.dtype(), base + static_cast<std::size_t>(i) * dtype_size(t.dtype()));
            }
            return;
        }
    }
    for (std::int64_t i = 0; i < count; ++i) {
        out[i] = t.get_f32(first + i);
    }
}

PooledMap empty_map(const Tensor& t, int max_side) {
    const Grid2D g = grid_of(t.shape());
    PooledMap m;
    m.source_rows = g.rows;
    m.source_cols = g.cols;
    m.rows = static_cast<int>(std::min<std::int64_t>(g.rows, std::max(1, max_side)));
    m.cols = static_cast<int>(std::min<std::int64_t>(g.cols, std::max(1, max_side)));
    if (t.numel() == 0) {
        m.rows = m.cols = 0;
    }
    return m;
}

std::vector<int> cell_of_column(const PooledMap& m) {
    std::vector<int> cells(static_cast<std::size_t>(m.source_cols));
    for (std::int64_t c = 0; c < m.source_cols; ++c) {
        cells[static_cast<std::size_t>(c)] = static_cast<int>(c * m.cols / m.source_cols);
    }
    return cells;
}

int cell_of_row(const PooledMap& m, std::int64_t row) {
    return static_cast<int>(row * m.rows / m.source_rows);
}

// Splits the map's rows into bands, one per thread, so that no two threads write the same cell.
template <class Body>
void for_row_bands(const PooledMap& m, Body body) {
    const int threads = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1u, 8u));
    const std::int64_t elements = m.source_rows * m.source_cols;
    if (threads == 1 || elements < (1 << 20) || m.rows < threads) {
        body(0, m.rows, 0);
        return;
    }
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t) {
        const int begin = m.rows * t / threads, end = m.rows * (t + 1) / threads;
        pool.emplace_back([&body, begin, end, t] { body(begin, end, t); });
    }
}

// Source rows [first, last) whose cell lies in [cell_begin, cell_end).
std::pair<std::int64_t, std::int64_t> source_rows_of(const PooledMap& m, int cell_begin, int cell_end) {
    auto first_row = [&](int cell) {
        return (static_cast<std::int64_t>(cell) * m.source_rows + m.rows - 1) / m.rows;
    };
    return {first_row(cell_begin), first_row(cell_end)};
}

} // namespace

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
    const auto col_cell = cell_of_column(m);
    std::vector<std::int64_t> masked(16, 0);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for_row_bands(m, [&](int cell_begin, int cell_end, int thread) {
        std::vector<float> row(static_cast<std::size_t>(m.source_cols));
        const auto [first, last] = source_rows_of(m, cell_begin, cell_end);
        for (std::int64_t r = first; r < last; ++r) {
            read_row(tensor, r * m.source_cols, m.source_cols, row.data());
            const std::size_t base = static_cast<std::size_t>(cell_of_row(m, r)) * m.cols;
            for (std::int64_t c = 0; c < m.source_cols; ++c) {
                const float v = row[static_cast<std::size_t>(c)];
                const std::size_t cell = base + col_cell[static_cast<std::size_t>(c)];
                if (!std::isfinite(v)) {
                    ++masked[static_cast<std::size_t>(thread)];
                    magnitude[cell] = std::numeric_limits<float>::infinity();
                    m.values[cell] = nan;
                } else if (std::fabs(v) > magnitude[cell]) {
                    magnitude[cell] = std::fabs(v);
                    m.values[cell] = v;
                }
            }
        }
    });
    for (auto n : masked) {
        m.masked_elements += n;
    }
    return m;
}

ErrorAnalysis analyse_error(const Tensor& ref, const Tensor& cand, double atol, double rtol, int max_side,
                            PooledMap* ref_values, PooledMap* cand_values) {
    if (ref.numel() != cand.numel()) {
        throw Error("error map: reference " + ref.describe() + " and candidate " + cand.describe() +
                    " differ in element count");
    }
    ErrorAnalysis a;
    a.numel = ref.numel();
    a.ratio = empty_map(ref, max_side);
    PooledMap& m = a.ratio;
    if (m.rows == 0 || m.cols == 0) {
        return a;
    }
    m.values.assign(static_cast<std::size_t>(m.rows) * m.cols, 0.0f);
    const auto col_cell = cell_of_column(m);
    // Value maps pooled in the same pass: magnitude holds each cell's largest |v| so far.
    PooledMap* value_maps[2] = {ref_values, cand_values};
    std::vector<float> magnitude[2];
    for (int s = 0; s < 2; ++s) {
        if (value_maps[s]) {
            *value_maps[s] = empty_map(ref, max_side); // the ratio map's geometry, whatever cand's shape
            value_maps[s]->values.assign(m.values.size(), 0.0f);
            magnitude[s].assign(m.values.size(), -1.0f);
        }
    }
    std::vector<std::int64_t> masked_values[2] = {std::vector<std::int64_t>(16, 0), std::vector<std::int64_t>(16, 0)};
    const float fnan = std::numeric_limits<float>::quiet_NaN();
    struct Partial {
        std::int64_t mismatches = 0, first = -1, worst = -1, exact = 0, nonfinite = 0;
        double worst_ratio = 0;
        std::array<std::int64_t, kHistogramBins> histogram{};
    };
    std::vector<Partial> partial(16);
    const double inf = std::numeric_limits<double>::infinity();
    const double bin_scale = kHistogramBins / (kHistogramLog10Max - kHistogramLog10Min);
    for_row_bands(m, [&](int cell_begin, int cell_end, int thread) {
        Partial& p = partial[static_cast<std::size_t>(thread)];
        std::vector<float> rrow(static_cast<std::size_t>(m.source_cols)), crow(rrow.size());
        const auto [first, last] = source_rows_of(m, cell_begin, cell_end);
        for (std::int64_t r = first; r < last; ++r) {
            read_row(ref, r * m.source_cols, m.source_cols, rrow.data());
            read_row(cand, r * m.source_cols, m.source_cols, crow.data());
            const std::size_t base = static_cast<std::size_t>(cell_of_row(m, r)) * m.cols;
            for (int s = 0; s < 2; ++s) {
                if (!value_maps[s]) {
                    continue;
                }
                const float* row = s == 0 ? rrow.data() : crow.data();
                float* values = value_maps[s]->values.data();
                float* mag = magnitude[s].data();
                for (std::int64_t c = 0; c < m.source_cols; ++c) {
                    const float v = row[c];
                    const std::size_t cell = base + col_cell[static_cast<std::size_t>(c)];
                    if (!std::isfinite(v)) {
                        ++masked_values[s][static_cast<std::size_t>(thread)];
                        mag[cell] = std::numeric_limits<float>::infinity();
                        values[cell] = fnan;
                    } else if (std::fabs(v) > mag[cell]) {
                        mag[cell] = std::fabs(v);
                        values[cell] = v;
                    }
                }
            }
            for (std::int64_t c = 0; c < m.source_cols; ++c) {
                const double x = rrow[static_cast<std::size_t>(c)], y = crow[static_cast<std::size_t>(c)];
                double ratio;
                if (std::isfinite(x) && std::isfinite(y)) {
                    const double diff = std::fabs(x - y), tol = atol + rtol * std::fabs(y);
                    ratio = diff == 0 ? 0 : (tol > 0 ? diff / tol : inf);
                } else {
                    // Equal infinities match; NaN never does (torch.allclose with equal_nan=False).
                    ratio = (std::isinf(x) && x == y) ? 0 : inf;
                }
                const std::int64_t linear = r * m.source_cols + c;
                if (ratio > 1) {
                    ++p.mismatches;
                    if (p.first < 0) {
                        p.first = linear;
                    }
                    if (ratio > p.worst_ratio || p.worst < 0) {
                        p.worst_ratio = ratio;
                        p.worst = linear;
                    }
                } else if (ratio > p.worst_ratio) {
                    p.worst_ratio = ratio;
                }
                float& cell = m.values[base + col_cell[static_cast<std::size_t>(c)]];
                if (std::isinf(ratio)) {
                    ++p.nonfinite;
                    cell = std::numeric_limits<float>::quiet_NaN();
                } else {
                    if (!std::isnan(cell) && ratio > cell) {
                        cell = static_cast<float>(ratio);
                    }
                    if (ratio == 0) {
                        ++p.exact;
                    } else {
                        const int bin =
                            static_cast<int>((std::log10(ratio) - kHistogramLog10Min) * bin_scale);
                        ++p.histogram[static_cast<std::size_t>(std::clamp(bin, 0, kHistogramBins - 1))];
                    }
                }
            }
        }
    });
    for (int s = 0; s < 2; ++s) {
        if (value_maps[s]) {
            for (auto n : masked_values[s]) {
                value_maps[s]->masked_elements += n;
            }
        }
    }
    // Threads own row bands in order, so the first band with a mismatch holds the first mismatch.
    for (const Partial& p : partial) {
        a.mismatch_count += p.mismatches;
        a.exact_count += p.exact;
        a.nonfinite_mismatches += p.nonfinite;
        m.masked_elements += p.nonfinite;
        if (a.first_mismatch < 0 && p.first >= 0) {
            a.first_mismatch = p.first;
        }
        if (p.worst >= 0 && (a.worst_mismatch < 0 || p.worst_ratio > a.worst_ratio)) {
            a.worst_mismatch = p.worst;
        }
        a.worst_ratio = std::max(a.worst_ratio, p.worst_ratio);
        for (int b = 0; b < kHistogramBins; ++b) {
            a.histogram[static_cast<std::size_t>(b)] += p.histogram[static_cast<std::size_t>(b)];
        }
    }
    return a;
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

} // namespace pkbw::app
