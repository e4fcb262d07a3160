// HeatmapView's colour scales for the values and the difference: the full range of the maps' finite
// cells, or a robust one (the 1st-99th percentile of the cells, the tails saturating) so that a
// heavy-tailed output (a few elements at 2e6 among typical 1e5) is not drawn almost black. "Auto"
// takes the robust scale when the largest cell is far beyond the 99th percentile, and the summary
// says so. A difference map whose finite differences are all 0 gets a readable ±1 and says that.
#include "heatmapview.h"

#include <QComboBox>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

namespace pkbw::app {
namespace {

// The finite cells of the maps.
std::vector<double> finite_cells(std::initializer_list<const PooledMap*> maps) {
    std::vector<double> out;
    for (const PooledMap* m : maps) {
        for (float v : m->values) {
            if (std::isfinite(v)) {
                out.push_back(v);
            }
        }
    }
    return out;
}

double nth(std::vector<double> values, double percent) {
    if (values.empty()) {
        return 0;
    }
    const auto k =
        static_cast<std::size_t>(std::lround(percent / 100.0 * static_cast<double>(values.size() - 1)));
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
    return values[k];
}

std::vector<double> magnitudes(std::vector<double> values) {
    for (double& v : values) {
        v = std::fabs(v);
    }
    return values;
}

} // namespace

// A heavy tail: the largest magnitude more than kHeavyTail times the 99th percentile's.
constexpr double kHeavyTail = 8.0;

ValueScale robust_value_range(const PooledMap& a, const PooledMap& b) {
    ValueScale s;
    const auto [lo, hi] = shared_value_range(a, b, &s.diverging);
    s.lo = lo;
    s.hi = hi;
    const std::vector<double> cells = finite_cells({&a, &b});
    if (cells.empty()) {
        return s;
    }
    double rlo = 0, rhi = 0;
    if (s.diverging) {
        rhi = nth(magnitudes(cells), 99);
        rlo = -rhi;
    } else {
        rlo = nth(cells, 1);
        rhi = nth(cells, 99);
    }
    if (!(rhi > rlo)) {
        return s; // nearly constant cells: the full range is the readable one
    }
    s.lo = rlo;
    s.hi = rhi;
    s.clipped = true;
    const auto beyond =
        std::count_if(cells.begin(), cells.end(), [&](double v) { return v < rlo || v > rhi; });
    s.saturated_fraction = static_cast<double>(beyond) / static_cast<double>(cells.size());
    return s;
}

bool heavy_tailed(const PooledMap& a, const PooledMap& b) {
    const std::vector<double> m = magnitudes(finite_cells({&a, &b}));
    if (m.size() < 16) {
        return false;
    }
    const double p99 = nth(m, 99), largest = *std::max_element(m.begin(), m.end());
    return p99 > 0 && largest > kHeavyTail * p99;
}

void HeatmapView::apply_value_scales() {
    scale_note_.clear();
    if (!set_.has_values) {
        return;
    }
    const int mode = scale_->currentIndex(); // 0 auto, 1 full range, 2 robust
    const bool robust = mode == 2 || (mode == 0 && heavy_tailed(set_.ref, set_.cand));
    bool diverging = false;
    const auto [full_lo, full_hi] = shared_value_range(set_.ref, set_.cand, &diverging);
    ValueScale values{full_lo, full_hi, diverging};
    if (robust) {
        values = robust_value_range(set_.ref, set_.cand);
    }
    for (int i = 0; i < 2; ++i) {
        set_value_gradient(maps_[i], values.diverging);
        maps_[i]->setDataRange(QCPRange(values.lo, values.hi));
    }
    if (values.clipped) {
        scale_note_ = tr(" Value colours span the 1st–99th percentile of the cells (%1 to %2; the full range "
                         "is %3 to %4): %5% of cells are beyond it and saturate.")
                          .arg(QString::number(values.lo, 'g', 4), QString::number(values.hi, 'g', 4),
                               QString::number(full_lo, 'g', 4), QString::number(full_hi, 'g', 4))
                          .arg(QString::number(100 * values.saturated_fraction, 'g', 2));
    }
    // The difference: ± its largest finite value, or the 99th percentile of |difference| when robust.
    const ErrorAnalysis& e = set_.error;
    QCPAxis* diff_axis = maps_[2]->colorScale()->axis();
    if (e.max_abs_diff == 0) {
        maps_[2]->setDataRange(QCPRange(-1, 1));
        diff_axis->setLabel(tr("every finite difference is 0"));
        return;
    }
    double d = e.max_abs_diff;
    if (robust) {
        const double p99 = nth(magnitudes(finite_cells({&e.diff})), 99);
        d = p99 > 0 ? p99 : d;
    }
    maps_[2]->setDataRange(QCPRange(-d, d));
    diff_axis->setLabel(d < e.max_abs_diff ? tr("±%1 (99th percentile)").arg(QString::number(d, 'g', 3))
                                           : QString());
}

} // namespace pkbw::app
