#include "fittingticker.h"

#include <QFontMetricsF>
#include <cmath>

namespace pkbw::app {
namespace {

// The smallest 1, 2 or 5 times a power of ten at or above x (x > 0).
double nice_at_least(double x) {
    const double magnitude = std::pow(10.0, std::floor(std::log10(x)));
    for (double mantissa : {1.0, 2.0, 5.0, 10.0}) {
        if (mantissa * magnitude >= x * (1 - 1e-9)) {
            return mantissa * magnitude;
        }
    }
    return 10 * magnitude;
}

} // namespace

FittingTicker::FittingTicker(QCPAxis* axis, bool integer_steps)
    : axis_(axis)
    , integer_steps_(integer_steps) {}

int FittingTicker::axis_length() const {
    const QCPAxisRect* rect = axis_->axisRect();
    return axis_->orientation() == Qt::Horizontal ? rect->width() : rect->height();
}

void FittingTicker::set_extent(double lo, double hi) {
    extent_lo_ = lo;
    extent_hi_ = hi;
}

double FittingTicker::fitting_step(const QCPRange& range, const QLocale& locale, QChar format_char,
                                   int precision) {
    const int length = axis_length();
    if (length < 8 || !(range.size() > 0)) {
        return 0;
    }
    const QFontMetricsF metrics(axis_->tickLabelFont());
    const double gap = metrics.height() * 0.5; // blank between two labels
    const double per_px = range.size() / length;
    const bool horizontal = axis_->orientation() == Qt::Horizontal;
    // No two labels can be closer than a line; steps grow by 2 or 2.5 each try.
    double step = nice_at_least(std::max(metrics.height() * per_px, integer_steps_ ? 1.0 : 1e-300));
    for (int attempt = 0; attempt < 64; ++attempt, step = nice_at_least(step * 1.01)) {
        QVector<double> ticks = createTickVector(step, range);
        trimTicks(range, ticks, false);
        double extent = metrics.height(); // a vertical axis stacks lines
        if (horizontal) {
            extent = 0;
            for (double tick : ticks) {
                extent = std::max(
                    extent, metrics.horizontalAdvance(getTickLabel(tick, locale, format_char, precision)));
            }
        }
        if (step / per_px >= extent + gap) {
            return step;
        }
    }
    return nice_at_least(range.size() * 2); // not even one label fits: at most one tick
}

void FittingTicker::generate(const QCPRange& range, const QLocale& locale, QChar format_char, int precision,
                             QVector<double>& ticks, QVector<double>* sub_ticks,
                             QVector<QString>* tick_labels) {
    generated_range_ = range;
    generated_length_ = axis_length();
    step_ = fitting_step(range, locale, format_char, precision);
    const QCPRange shown = extent_lo_ < extent_hi_ ? QCPRange(std::max(range.lower, extent_lo_),
                                                              std::min(range.upper, extent_hi_))
                                                   : range;
    if (shown.lower > shown.upper) { // the extent is out of view: no ticks
        ticks.clear();
        if (sub_ticks) {
            sub_ticks->clear();
        }
        if (tick_labels) {
            tick_labels->clear();
        }
        return;
    }
    // The step fits the whole range's scale; the ticks are those of the extent's part of it.
    QCPAxisTicker::generate(shown, locale, format_char, precision, ticks, sub_ticks, tick_labels);
}

double FittingTicker::getTickStep(const QCPRange& range) {
    return step_ > 0 ? step_ : QCPAxisTicker::getTickStep(range);
}

bool FittingTicker::stale() const {
    // A range that moved by rounding only (a scale ratio re-applied) is the same range: comparing
    // exactly could replot forever.
    const QCPRange now = axis_->range();
    const double slack = 1e-9 * std::max(std::fabs(now.size()), 1e-300);
    return generated_length_ != axis_length() || std::fabs(now.lower - generated_range_.lower) > slack ||
           std::fabs(now.upper - generated_range_.upper) > slack;
}

void use_fitting_ticks(QCPAxis* axis, bool integer_steps) {
    QSharedPointer<FittingTicker> ticker(new FittingTicker(axis, integer_steps));
    axis->setTicker(ticker);
    QCustomPlot* plot = axis->parentPlot();
    // A weak reference: the axis owns the ticker, and the plot owns the axis.
    QObject::connect(plot, &QCustomPlot::afterReplot, plot, [plot, weak = ticker.toWeakRef()] {
        const auto t = weak.toStrongRef();
        if (t && t->stale()) {
            plot->replot(QCustomPlot::rpQueuedReplot);
        }
    });
}

void use_fitting_ticks(QCustomPlot* plot, bool integer_steps) {
    use_fitting_ticks(plot->xAxis, integer_steps);
    use_fitting_ticks(plot->yAxis, integer_steps);
}

void set_tick_extent(QCPAxis* axis, double lo, double hi) {
    if (const auto ticker = axis->ticker().dynamicCast<FittingTicker>()) {
        ticker->set_extent(lo, hi);
    }
}

} // namespace pkbw::app
