#include "perfview.h"

#include "perfstatistics.h"
#include "pkbw/core/perf_stats.h"
#include "qtconvert.h"
#include "theme.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <qcustomplot.h>
#include <tuple>

namespace pkbw::app {
namespace {

// Reference and candidate, in every plot of the tab.
QColor side_color(int side) {
    return side == 0 ? QColor(0x45, 0x7b, 0x9d) : QColor(0xe7, 0x6f, 0x51);
}

} // namespace

PerfView::PerfView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    summary_ = new QLabel(tr("No run open."), this);
    summary_->setObjectName(QStringLiteral("perfSummary"));
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(summary_);
    auto* split = new QSplitter(Qt::Vertical, this);
    plot_ = new QCustomPlot(split);
    plot_->setObjectName(QStringLiteral("perfPlot"));
    plot_->plotLayout()->insertRow(0);
    title_ = new QCPTextElement(plot_, QString());
    plot_->plotLayout()->addElement(0, 0, title_);
    plot_->xAxis->setLabel(tr("rank"));
    plot_->yAxis->setLabel(tr("ms per iteration"));
    plot_->legend->setVisible(true);
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    series_ = new QCustomPlot(split);
    series_->setObjectName(QStringLiteral("perfSeries"));
    series_->plotLayout()->insertRow(0);
    series_->plotLayout()->addElement(
        0, 0, new QCPTextElement(series_, tr("Every sample in timing order (pkbw's blocks, ABBA)")));
    series_->xAxis->setLabel(tr("sample"));
    series_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    table_ = new QTableWidget(split);
    table_->setObjectName(QStringLiteral("perfSummaries"));
    table_->setColumnCount(4);
    table_->setHorizontalHeaderLabels({tr("Side"), tr("Rank"), tr("Stored figure"), tr("Value")});
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    table_->verticalHeader()->hide();
    split->addWidget(plot_);
    split->addWidget(series_);
    split->addWidget(table_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);
}

void PerfView::set_data(std::shared_ptr<const RunData> data) {
    data_ = std::move(data);
    plot_->clearPlottables();
    plot_->clearItems();
    series_->clearGraphs();
    series_->setVisible(false);
    table_->setRowCount(0);
    if (!data_) {
        summary_->setText(tr("No run open."));
        title_->setText(QString());
        plot_->replot();
        return;
    }
    const GroupedSamples g = group_samples(*data_);
    // Samples are stored in ms; iterations under a millisecond (most single kernels) are plotted in
    // µs, so that the axis reads 15 µs rather than 0.015 ms.
    double largest_ms = 0;
    for (const auto& side : g.per_rank) {
        for (const auto& [rank, ms] : side) {
            largest_ms = std::max(largest_ms, percentile(ms, 95));
        }
    }
    // Without samples (an imported PKB run, a damaged table) the stored times decide, so that the
    // statistics table still reads in the unit a plot of this run would use.
    const bool micro = largest_ms > 0 ? largest_ms < 1.0 : statistics_in_microseconds(data_->summaries);
    const double scale = micro ? 1e3 : 1.0;
    const QString unit_label = micro ? tr("µs per iteration") : tr("ms per iteration");
    draw_boxes(g, scale, unit_label);
    if (plot_->plottableCount() == 0) {
        draw_pkb_trials();
    }
    plot_->legend->setVisible(plot_->plottableCount() > 0); // an empty legend is a stray box
    // Nothing to plot (an eval run, a run without samples): no empty 0–1 ms frame.
    plot_->setVisible(plot_->plottableCount() > 0);
    const bool pkb_trials = plot_->plottableCount() > 0 && g.per_rank[0].empty();
    QString title = pkb_trials ? tr("PKB's speedup per trial (imported run)")
                               : tr("Per-rank iteration time (box: quartiles, whiskers: p5–p95)");
    if (!speedup_is_result(data_->run.status)) {
        title += tr(" — for inspection only: %1").arg(to_qstring(speedup_withheld_reason(data_->run.status)));
    }
    title_->setText(title);
    theme_plot(plot_);
    plot_->replot();
    draw_series(scale, unit_label);

    fill_table(micro);
    summary_->setText(summary_text());
}

void PerfView::draw_boxes(const GroupedSamples& g, double scale, const QString& unit_label) {
    const QColor colors[2] = {side_color(0), side_color(1)};
    const QString names[2] = {tr("reference"), tr("candidate")};
    double ymax = 0;
    for (int side = 0; side < 2; ++side) {
        if (g.per_rank[side].empty()) {
            continue;
        }
        auto* box = new QCPStatisticalBox(plot_->xAxis, plot_->yAxis);
        box->setName(names[side]);
        box->setBrush(QColor(colors[side].red(), colors[side].green(), colors[side].blue(), 140));
        box->setPen(QPen(colors[side].darker(130)));
        box->setWidth(0.35);
        // Whiskers and medians in the theme's text colour: black ones vanish on the dark theme.
        const QColor ink = current_theme() == Theme::Dark ? QColor(0xd8, 0xd8, 0xd8) : QColor(Qt::black);
        box->setWhiskerPen(QPen(ink, 1, Qt::DashLine));
        box->setWhiskerBarPen(QPen(ink, 1));
        box->setMedianPen(QPen(ink, 2));
        for (const auto& [rank, ms] : g.per_rank[side]) {
            const double p5 = percentile(ms, 5), q1 = percentile(ms, 25), med = percentile(ms, 50),
                         q3 = percentile(ms, 75), p95 = percentile(ms, 95);
            box->addData(rank + (side == 0 ? -0.2 : 0.2), p5 * scale, q1 * scale, med * scale, q3 * scale,
                         p95 * scale);
            ymax = std::max(ymax, p95 * scale);
        }
    }
    plot_->xAxis->setLabel(tr("rank"));
    plot_->yAxis->setLabel(unit_label);
    plot_->xAxis->setRange(-0.7, data_->world_size() - 0.3);
    QSharedPointer<QCPAxisTickerFixed> ticker(new QCPAxisTickerFixed);
    ticker->setTickStep(1);
    plot_->xAxis->setTicker(ticker);
    plot_->yAxis->setRange(0, ymax > 0 ? ymax * 1.1 : 1);
}

void PerfView::draw_pkb_trials() {
    // An imported PKB run has no samples, only PKB's speedup per trial: plot those, so that the
    // spread of identical trials is seen (issue 19: 1.44x and 0.665x for one solution).
    QVector<double> trials, speedups;
    for (const PerfSummaryRow& row : data_->summaries) {
        if (row.rank == -1 && row.statistic.rfind("pkb_speedup.trial_", 0) == 0) {
            trials << std::atoi(row.statistic.c_str() + 18);
            speedups << row.value;
        }
    }
    if (!trials.isEmpty()) {
        QCPGraph* graph = plot_->addGraph();
        graph->setName(tr("PKB's speedup per trial"));
        graph->setLineStyle(QCPGraph::lsNone);
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, side_color(1), 10));
        graph->setData(trials, speedups, false);
        plot_->xAxis->setLabel(tr("trial"));
        plot_->yAxis->setLabel(tr("PKB speedup ×"));
        plot_->xAxis->setRange(-0.7, *std::max_element(trials.begin(), trials.end()) + 0.7);
        plot_->yAxis->setRange(0, std::max(1.2, *std::max_element(speedups.begin(), speedups.end()) * 1.15));
        auto* one = new QCPItemStraightLine(plot_); // parity
        one->point1->setCoords(0, 1);
        one->point2->setCoords(1, 1);
        one->setPen(QPen(QColor(0xc0, 0x30, 0x30), 1, Qt::DashLine));
    }
}

void PerfView::fill_table(bool microseconds) {
    // Each stored figure in words, times in the plots' unit; the stored key on hover.
    table_->setRowCount(static_cast<int>(data_->summaries.size()));
    for (int i = 0; i < static_cast<int>(data_->summaries.size()); ++i) {
        const PerfSummaryRow& s = data_->summaries[static_cast<std::size_t>(i)];
        const StatisticText text = describe_statistic(s, microseconds);
        table_->setItem(i, 0, new QTableWidgetItem(to_qstring(to_string(s.side))));
        table_->setItem(i, 1, new QTableWidgetItem(s.rank < 0 ? tr("all ranks") : QString::number(s.rank)));
        auto* label = new QTableWidgetItem(text.label);
        label->setToolTip(tr("stored as %1").arg(text.key));
        table_->setItem(i, 2, label);
        table_->setItem(i, 3, new QTableWidgetItem(text.value));
    }
    table_->setVisible(table_->rowCount() > 0); // an eval run stores none: no empty header
}

void PerfView::draw_series(double scale, const QString& unit_label) {
    // Per rank, pkbw's samples in the order they were timed: blocks by their index (the ABBA order
    // both engines number them in), each block's iterations in order. PKB's series and the bare
    // NCCL loop are other measurements (block < 0) and stay out, as from the speedup.
    struct Point {
        int block, side, iteration;
        double ms;
    };
    std::map<int, std::vector<Point>> per_rank;
    for (const PerfSample& s : data_->samples) {
        if (s.block >= 0 && (s.side == Side::Reference || s.side == Side::Candidate)) {
            per_rank[s.rank].push_back({s.block, s.side == Side::Reference ? 0 : 1, s.iteration, s.ms});
        }
    }
    if (per_rank.empty()) {
        return;
    }
    const QColor colors[2] = {side_color(0), side_color(1)};
    const QString names[2] = {tr("reference"), tr("candidate")};
    double xmax = 0, ymax = 0;
    bool in_legend[2] = {false, false};
    for (auto& [rank, points] : per_rank) {
        std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) {
            return std::tie(a.block, a.side, a.iteration) < std::tie(b.block, b.side, b.iteration);
        });
        QVector<double> xs[2], ys[2];
        for (std::size_t i = 0; i < points.size(); ++i) {
            xs[points[i].side] << static_cast<double>(i);
            ys[points[i].side] << points[i].ms * scale;
            ymax = std::max(ymax, points[i].ms * scale);
        }
        xmax = std::max(xmax, static_cast<double>(points.size()));
        for (int side = 0; side < 2; ++side) {
            if (xs[side].isEmpty()) {
                continue;
            }
            QCPGraph* graph = series_->addGraph();
            graph->setName(names[side]);
            graph->setLineStyle(QCPGraph::lsNone);
            // Later ranks lighter, so that rank 0 reads on top of them.
            QColor color = colors[side];
            color.setAlpha(rank == 0 ? 255 : 110);
            graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, 3));
            graph->setData(xs[side], ys[side], true);
            if (in_legend[side]) {
                graph->removeFromLegend();
            }
            in_legend[side] = true;
        }
    }
    series_->yAxis->setLabel(unit_label);
    series_->xAxis->setLabel(per_rank.size() > 1 ? tr("sample (rank 0 dark, others light)") : tr("sample"));
    series_->xAxis->setRange(-1, xmax);
    series_->yAxis->setRange(0, ymax > 0 ? ymax * 1.1 : 1);
    series_->legend->setVisible(true);
    theme_plot(series_);
    series_->setVisible(true);
    series_->replot();
}

QString PerfView::plot_title() const {
    return title_->text();
}

} // namespace pkbw::app
