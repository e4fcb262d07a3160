// HeatmapView's colour scales for the values and the difference: the full range of the maps' finite
// cells, or a robust one (the 1st-99th percentile of the cells, the tails saturating) so that a
// heavy-tailed output (a few elements at 2e6 among typical 1e5) is not drawn almost black. "Auto"
// takes the robust scale when the largest cell is far beyond the 99th percentile, and the summary
// says so. Symlog, chosen, is linear near 0 and logarithmic beyond, every value in range: the cells
// go into the maps as symlog(v) and the colour scale's ticks are labelled with the values. A
// difference map whose finite differences are all 0 gets a readable ±1 and says that.
#include "heatmapview.h"

#include <QComboBox>
#include <QFontMetrics>
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

// A symlog colour scale's ticks: 0 and ±c·10^k where they fit along the axis, labelled with the
// values (the scale's coordinates are symlog(v, c)).
class SymlogTicker : public QCPAxisTicker {
public:
    SymlogTicker(QCPAxis* axis, double c)
        : axis_(axis)
        , c_(c) {}
    void set_threshold(double c) { c_ = c; }

protected:
    int getSubTickCount(double) override { return 0; }
    QString getTickLabel(double tick, const QLocale&, QChar, int) override {
        const double v = symlog_inverse(tick, c_);
        return std::fabs(v) < c_ * 1e-6 ? QStringLiteral("0") : QString::number(v, 'g', 3);
    }
    QVector<double> createTickVector(double, const QCPRange& range) override {
        // As many labels as leave a label's size free between neighbours at the axis's length.
        const QFontMetrics metrics(axis_->tickLabelFont());
        const bool vertical = axis_->orientation() == Qt::Vertical;
        const int length = vertical ? axis_->axisRect()->height() : axis_->axisRect()->width();
        const int label = vertical ? metrics.height() : metrics.horizontalAdvance(QStringLiteral("-1e+06"));
        const int max_ticks = std::max(2, length / (2 * std::max(1, label)));
        QVector<double> ticks;
        for (double v :
             symlog_ticks(symlog_inverse(range.lower, c_), symlog_inverse(range.upper, c_), c_, max_ticks)) {
            ticks << symlog(v, c_);
        }
        return ticks;
    }

private:
    QCPAxis* axis_;
    double c_;
};

} // namespace

double symlog(double v, double c) {
    return std::copysign(std::log10(1 + std::fabs(v) / c), v);
}

double symlog_inverse(double y, double c) {
    return std::copysign(c * (std::pow(10.0, std::fabs(y)) - 1), y);
}

double symlog_threshold(std::initializer_list<const PooledMap*> maps) {
    std::vector<double> nonzero = magnitudes(finite_cells(maps));
    nonzero.erase(std::remove(nonzero.begin(), nonzero.end(), 0.0), nonzero.end());
    if (nonzero.empty()) {
        return 0;
    }
    return std::pow(10.0, std::floor(std::log10(nth(std::move(nonzero), 10))));
}

std::vector<double> symlog_ticks(double lo, double hi, double c, int max_ticks) {
    std::vector<double> out;
    if (!(c > 0) || !(hi > lo)) {
        return out;
    }
    const double top = std::max(std::fabs(lo), std::fabs(hi));
    int decades = 0; // c·10^k <= top for k < decades
    while (decades < 400 && c * std::pow(10.0, decades) <= top * (1 + 1e-9)) {
        ++decades;
    }
    const int sides = lo < 0 && hi > 0 ? 2 : 1;
    const int per_side = std::max(1, (max_ticks - 1) / sides);
    const int step = std::max(1, (decades + per_side - 1) / per_side);
    const double slack = top * 1e-9; // c·10^k computed in binary may miss a bound it equals
    if (lo <= 0 && hi >= 0) {
        out.push_back(0);
    }
    for (int k = 0; k < decades; k += step) {
        const double v = c * std::pow(10.0, k);
        for (double t : {-v, v}) {
            if (t >= lo - slack && t <= hi + slack) {
                out.push_back(t);
            }
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

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

void HeatmapView::use_symlog_ticks(int map, bool on) {
    QCPAxis* axis = maps_[map]->colorScale()->axis();
    if (!fitting_tickers_[map]) {
        fitting_tickers_[map] = axis->ticker(); // the colour scale's own, before symlog's replaces it
    }
    if (!on) {
        if (axis->ticker() != fitting_tickers_[map]) {
            axis->setTicker(fitting_tickers_[map]);
        }
    } else if (const auto ticker = axis->ticker().dynamicCast<SymlogTicker>()) {
        ticker->set_threshold(symlog_c_[map]);
    } else {
        axis->setTicker(QSharedPointer<SymlogTicker>::create(axis, symlog_c_[map]));
    }
}

void HeatmapView::apply_symlog(bool chosen) {
    const double value_c = chosen ? symlog_threshold({&set_.ref, &set_.cand}) : 0;
    const double diff_c = chosen ? symlog_threshold({&set_.error.diff}) : 0;
    const double wanted[3] = {value_c, value_c, diff_c};
    bool changed = false;
    for (int i = 0; i < 3; ++i) {
        changed = changed || wanted[i] != symlog_c_[i];
        symlog_c_[i] = wanted[i];
        use_symlog_ticks(i, wanted[i] > 0);
    }
    if (changed) {
        show_whole_maps(); // the cells again, through symlog or not
        schedule_repool(); // and a zoomed region's (nothing when not zoomed)
    }
}

void HeatmapView::apply_value_scales() {
    scale_note_.clear();
    if (!set_.has_values) {
        return;
    }
    const int mode = scale_->currentIndex(); // 0 auto, 1 full range, 2 robust, 3 symlog
    apply_symlog(mode == 3);
    const bool robust = mode == 2 || (mode == 0 && heavy_tailed(set_.ref, set_.cand));
    bool diverging = false;
    const auto [full_lo, full_hi] = shared_value_range(set_.ref, set_.cand, &diverging);
    ValueScale values{full_lo, full_hi, diverging};
    if (robust) {
        values = robust_value_range(set_.ref, set_.cand);
    }
    const double vc = symlog_c_[0];
    for (int i = 0; i < 2; ++i) {
        set_value_gradient(maps_[i], values.diverging);
        maps_[i]->setDataRange(vc > 0 ? QCPRange(symlog(values.lo, vc), symlog(values.hi, vc))
                                      : QCPRange(values.lo, values.hi));
    }
    if (values.clipped) {
        scale_note_ = tr(" Value colours span the 1st–99th percentile of the cells (%1 to %2; the full range "
                         "is %3 to %4): %5% of cells are beyond it and saturate.")
                          .arg(QString::number(values.lo, 'g', 4), QString::number(values.hi, 'g', 4),
                               QString::number(full_lo, 'g', 4), QString::number(full_hi, 'g', 4))
                          .arg(QString::number(100 * values.saturated_fraction, 'g', 2));
    } else if (vc > 0) {
        scale_note_ = tr(" Value colours are symlog: linear within ±%1, logarithmic beyond, up to %2 to %3.")
                          .arg(QString::number(vc, 'g', 3), QString::number(full_lo, 'g', 4),
                               QString::number(full_hi, 'g', 4));
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
    const double dc = symlog_c_[2];
    maps_[2]->setDataRange(dc > 0 ? QCPRange(-symlog(d, dc), symlog(d, dc)) : QCPRange(-d, d));
    diff_axis->setLabel(d < e.max_abs_diff ? tr("±%1 (99th percentile)").arg(QString::number(d, 'g', 3))
                        : dc > 0           ? tr("symlog, linear within ±%1").arg(QString::number(dc, 'g', 3))
                                           : QString());
}

} // namespace pkbw::app
