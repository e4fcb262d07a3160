// A tick step chosen from the axis's pixel length and its labels' size (review defect 26): QCustomPlot's
// default ticker aims at a fixed tick count, so a narrow heatmap printed "0204060801000". This ticker
// takes the smallest 1-2-5 step whose labels, as wide as their text along a horizontal axis and a line
// high along a vertical one, leave a gap between neighbours at the axis's current length.
#pragma once

#include <qcustomplot.h>

namespace pkbw::app {

class FittingTicker : public QCPAxisTicker {
public:
    // `integer_steps`: the axis counts things (rows, columns), so no step is below 1.
    FittingTicker(QCPAxis* axis, bool integer_steps);

    void generate(const QCPRange& range, const QLocale& locale, QChar format_char, int precision,
                  QVector<double>& ticks, QVector<double>* sub_ticks, QVector<QString>* tick_labels) override;
    // Ticks only within [lo, hi] (a map's rows or columns: a tick beyond the tensor names no row);
    // lo >= hi: anywhere in the range.
    void set_extent(double lo, double hi);
    // Whether the axis's range or length changed since the ticks were generated (a replot then
    // redraws them: QCustomPlot generates ticks before the layout that may resize the axis).
    bool stale() const;

protected:
    double getTickStep(const QCPRange& range) override;

private:
    int axis_length() const;
    double fitting_step(const QCPRange& range, const QLocale& locale, QChar format_char, int precision);

    QCPAxis* axis_;
    bool integer_steps_;
    double step_ = 0; // the chosen step, 0 to fall back to QCustomPlot's
    double extent_lo_ = 0, extent_hi_ = 0;
    QCPRange generated_range_;
    int generated_length_ = -1;
};

// Gives the plot's x and y axes fitting tickers and replots once more when a layout made the ticks
// stale (each such replot converges: the next finds the same range and length).
void use_fitting_ticks(QCustomPlot* plot, bool integer_steps);
void use_fitting_ticks(QCPAxis* axis, bool integer_steps); // one axis (a colour scale's)
// The plot's fitting tickers' extents (no-op on an axis with another ticker).
void set_tick_extent(QCPAxis* axis, double lo, double hi);

} // namespace pkbw::app
