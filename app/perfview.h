// Perf of one run: per-rank timing distributions of reference and candidate (box plots), every
// sample in timing order (warm-up drift, throttling, outliers and the ABBA alternation show there), the
// speedup with its 95% interval and verdict as the run stored them (pooled over its launches, each
// launch's own speedup beside), recomputed from the samples only for runs stored before those figures
// (core's perf_stats), bus bandwidth against peak when the run stored it, and every stored summary
// figure. Shows what exists: the perf tables may be sparse.
#pragma once

#include "perfstatistics.h"

#include <QWidget>
#include <memory>

class QCustomPlot;
class QCPTextElement;
class QLabel;
class QTableWidget;

namespace pkbw::app {

class PerfView : public QWidget {
    Q_OBJECT
public:
    explicit PerfView(QWidget* parent = nullptr);
    void set_data(std::shared_ptr<const RunData> data);
    // The whole line above the plots: headline() then the details.
    QString summary_text() const;
    // Where the speedup is the graph figure (microsecond calls), says so and gives the launched figure.
    QString method_text() const;
    // What the tab says first: "Speedup 1.131× (95% interval …): ambiguous" for a clean perf run, or
    // why no speedup is shown ("No speedup: timing not trusted (invalid_timing). timing not trusted:
    // candidate: …") for any other status; the figures of such a run appear only "for inspection".
    QString headline() const;
    QCustomPlot* plot() const { return plot_; }
    QString plot_title() const;
    // Every pkbw sample of every rank in the order it was timed: one graph per (side, rank).
    QCustomPlot* series_plot() const { return series_; }
    // The stored figures: label (in words) and value (with its unit) per row.
    QTableWidget* statistics_table() const { return table_; }

private:
    std::shared_ptr<const RunData> data_;
    QLabel* summary_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QCPTextElement* title_ = nullptr; // the box plot's title (says "for inspection only" when withheld)
    QCustomPlot* series_ = nullptr;
    QTableWidget* table_ = nullptr;

    // The per-rank box plots of both sides, in `unit_label` (samples in ms times `scale`).
    void draw_boxes(const GroupedSamples& g, double scale, const QString& unit_label);
    // A run without samples (an imported PKB run): PKB's speedup per trial, when it stored them.
    void draw_pkb_trials();
    void draw_series(double scale, const QString& unit_label);
    void fill_table(bool microseconds);
};

} // namespace pkbw::app
