#include "diffmap.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace pkbw::app {
namespace {

// Reads elements [first, first + count) of `t` as f32 into `out`: straight from memory for
// contiguous f32, through the tensor's element accessor otherwise.
void read_f32(const Tensor& t, std::int64_t first, std::int64_t count, float* out) {
    if (t.dtype() == DType::F32 && t.is_contiguous()) {
        std::copy_n(t.data_as<float>() + first, count, out);
        return;
    }
    for (std::int64_t i = 0; i < count; ++i) {
        out[i] = t.get_f32(first + i);
    }
}

} // namespace

DifferenceMap difference_map(const Tensor& ref, const Tensor& cand, int max_side) {
    if (ref.numel() != cand.numel()) {
        throw Error("difference map: the reference has " + std::to_string(ref.numel()) +
                    " elements, the candidate " + std::to_string(cand.numel()));
    }
    DifferenceMap out;
    PooledMap& m = out.diff;
    const Grid2D g = grid_of(ref.shape());
    m.source_rows = g.rows;
    m.source_cols = g.cols;
    if (ref.numel() == 0) {
        return out;
    }
    m.rows = static_cast<int>(std::min<std::int64_t>(g.rows, std::max(1, max_side)));
    m.cols = static_cast<int>(std::min<std::int64_t>(g.cols, std::max(1, max_side)));
    m.values.assign(static_cast<std::size_t>(m.rows) * static_cast<std::size_t>(m.cols), 0.0f);
    std::vector<bool> masked(m.values.size(), false);
    std::vector<int> col_cell(static_cast<std::size_t>(g.cols));
    for (std::int64_t c = 0; c < g.cols; ++c) {
        col_cell[static_cast<std::size_t>(c)] = static_cast<int>(c * m.cols / g.cols);
    }
    std::vector<float> a(static_cast<std::size_t>(g.cols)), b(static_cast<std::size_t>(g.cols));
    for (std::int64_t r = 0; r < g.rows; ++r) {
        const std::int64_t first = r * g.cols;
        read_f32(ref, first, g.cols, a.data());
        read_f32(cand, first, g.cols, b.data());
        const std::size_t row_base = static_cast<std::size_t>(r * m.rows / g.rows) * m.cols;
        for (std::int64_t c = 0; c < g.cols; ++c) {
            const float d = b[static_cast<std::size_t>(c)] - a[static_cast<std::size_t>(c)];
            const std::size_t cell =
                row_base + static_cast<std::size_t>(col_cell[static_cast<std::size_t>(c)]);
            if (!std::isfinite(d)) {
                masked[cell] = true;
                ++out.nonfinite;
                continue;
            }
            const double ad = std::fabs(static_cast<double>(d));
            if (ad > out.max_abs_diff) {
                out.max_abs_diff = ad;
                out.max_diff_index = first + c;
            } else if (out.max_diff_index < 0 && ad == 0) {
                out.max_diff_index = first + c;
            }
            float& v = m.values[cell];
            // Largest magnitude wins; on a +v / -v tie the positive one, so the order does not matter.
            if (std::fabs(d) > std::fabs(v) || (std::fabs(d) == std::fabs(v) && d > v)) {
                v = d;
            }
        }
    }
    m.masked_elements = out.nonfinite;
    for (std::size_t i = 0; i < masked.size(); ++i) {
        if (masked[i]) {
            m.values[i] = std::numeric_limits<float>::quiet_NaN();
        }
    }
    return out;
}

} // namespace pkbw::app
