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
#include <limits>
#include <map>
#include <qcustomplot.h>
#include <tuple>

namespace pkbw::app {
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
    const QColor colors[2] = {QColor(0x45, 0x7b, 0x9d), QColor(0xe7, 0x6f, 0x51)};
    const QString names[2] = {tr("reference"), tr("candidate")};
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
    if (plot_->plottableCount() == 0) {
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
            graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colors[1], 10));
            graph->setData(trials, speedups, false);
            plot_->xAxis->setLabel(tr("trial"));
            plot_->yAxis->setLabel(tr("PKB speedup ×"));
            plot_->xAxis->setRange(-0.7, *std::max_element(trials.begin(), trials.end()) + 0.7);
            plot_->yAxis->setRange(0,
                                   std::max(1.2, *std::max_element(speedups.begin(), speedups.end()) * 1.15));
            auto* one = new QCPItemStraightLine(plot_); // parity
            one->point1->setCoords(0, 1);
            one->point2->setCoords(1, 1);
            one->setPen(QPen(QColor(0xc0, 0x30, 0x30), 1, Qt::DashLine));
        }
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
    const QColor colors[2] = {QColor(0x45, 0x7b, 0x9d), QColor(0xe7, 0x6f, 0x51)};
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

namespace {

// The run summary's own words on why its timing is not trusted ("timing not trusted: candidate: its
// timed calls took ..."), up to the next "; " part; "" when it has none.
QString distrust_words(const RunRecord& run) {
    const QString summary = to_qstring(run.summary);
    const int at = summary.indexOf(QStringLiteral("timing not trusted"));
    if (at < 0) {
        return {};
    }
    const int end = summary.indexOf(QStringLiteral("; warning:"), at);
    return summary.mid(at, end < 0 ? -1 : end - at).toHtmlEscaped();
}

// An import-pkb run: PKB's own protocol timed it, pkbw recorded its figures and no samples.
bool imported_pkb_run(const RunRecord& run) {
    return run.backend.rfind("pkb-", 0) == 0 && run.command_line.size() > 1 &&
           run.command_line[1] == "import-pkb";
}

// What the store could not give of this run's timing ("perf samples (cannot read or write table
// perf_samples: database disk image is malformed)"): each part and the store's reason, without the
// store's path (the status bar names it); "" when every part was read.
QString unreadable_timing(const RunData& data) {
    QStringList parts;
    for (const std::string& part : data.unreadable) {
        const QString text = to_qstring(part);
        const int colon = text.indexOf(QStringLiteral(": "));
        if (!text.startsWith(QStringLiteral("perf ")) || colon < 0) {
            continue;
        }
        QString reason = text.mid(colon + 2);
        if (reason.startsWith(QStringLiteral("store "))) { // "store <path>: <reason>"
            reason = reason.mid(reason.indexOf(QStringLiteral(": ")) + 2);
        }
        parts << QStringLiteral("%1 (%2)").arg(text.left(colon), reason).toHtmlEscaped();
    }
    return parts.join(QStringLiteral(", "));
}

// The pooled figures of a run whose speedup is no result, for inspection: plain text, no verdict (a
// "faster" there read as the result it is not: the H200 store's reply_early run, 19408.500×).
QString inspection_text(const PerfFigures& f) {
    return QObject::tr("%1× (95% interval %2–%3%4; no verdict)")
        .arg(QString::number(f.speedup, 'f', 3))
        .arg(QString::number(f.ci_low, 'f', 3))
        .arg(QString::number(f.ci_high, 'f', 3))
        .arg(f.launches > 1 ? QObject::tr(", pooled over %1 launches").arg(f.launches) : QString());
}

QString figures_text(const PerfFigures& f) {
    QString text =
        QObject::tr("%1×</b> (95% interval %2–%3%4): <b>%5")
            .arg(QString::number(f.speedup, 'f', 3))
            .arg(QString::number(f.ci_low, 'f', 3))
            .arg(QString::number(f.ci_high, 'f', 3))
            .arg(f.launches > 1
                     ? QObject::tr(", pooled over %1 launches%2")
                           .arg(f.launches)
                           .arg(f.extended_from > 0
                                    ? QObject::tr(", %1 of them added when the first %2 read ambiguous")
                                          .arg(f.launches - f.extended_from)
                                          .arg(f.extended_from)
                                    : QString())
                     : QString())
            .arg(f.verdict);
    return text;
}

} // namespace

QString PerfView::plot_title() const {
    return title_->text();
}

QString PerfView::headline() const {
    if (!data_) {
        return {};
    }
    const bool imported = imported_pkb_run(data_->run);
    if (!imported && data_->run.mode != RunMode::Perf && !data_->summary("pkb_speedup") &&
        !data_->summary("speedup")) {
        return tr("No timing: run %1 is an %2 run (perf mode times the candidate against the reference).")
            .arg(data_->run.id)
            .arg(mode_text(data_->run.mode));
    }
    if (data_->run.status == RunStatus::Running) {
        return tr("Run %1 is still running: no speedup yet.").arg(data_->run.id);
    }
    if (data_->run.status == RunStatus::Interrupted) {
        return tr("<b>No speedup: run %1 was interrupted</b> before its timing finished.").arg(data_->run.id);
    }
    if (!speedup_is_result(data_->run.status)) {
        const QString words = distrust_words(data_->run);
        return tr("<b>No speedup: %1.</b>%2")
            .arg(to_qstring(speedup_withheld_reason(data_->run.status)))
            .arg(words.isEmpty() ? QString() : QStringLiteral(" ") + words + QLatin1Char('.'));
    }
    const PerfFigures f = compute_perf(*data_);
    if (imported && !f.has_figures) {
        return tr("<b>Imported PKB run:</b> PKB's own protocol timed it, not pkbw (no pkbw samples, "
                  "interval or verdict).");
    }
    if (!f.has_figures) {
        return {};
    }
    return tr("<b>Speedup %1</b>.").arg(figures_text(f));
}

// Which figure the run's speedup is (docs/perf.md "A method per kernel size"), and the other one's.
QString PerfView::method_text() const {
    const auto graph = data_->summary("headline_graph");
    const auto launched = data_->summary("launched_speedup");
    const auto launched_verdict = data_->summary("launched_verdict");
    if (!graph || data_->run.backend != "cuda") {
        return {}; // stored before the graph figure, or CPU loops (the host backend): one method only
    }
    if (*graph != 1.0) {
        // The launched figure is the headline: say so, and what the graph's replays read or that there were
        // none, so that two runs of one problem measured differently are not read alike.
        QString text =
            tr(" The figure is the launched figure: each call launched by its process, as a caller "
               "pays it.");
        if (const auto g = data_->summary("graph_speedup")) {
            text +=
                tr(" Graph figure (each side's calls replayed from a CUDA graph, the host's launches left "
                   "out): %1×")
                    .arg(QString::number(*g, 'f', 3));
            const auto low = data_->summary("graph_ci_low");
            const auto high = data_->summary("graph_ci_high");
            if (low && high) {
                text += tr(" (%1–%2)").arg(QString::number(*low, 'f', 3), QString::number(*high, 'f', 3));
            }
            if (const auto v = data_->summary("graph_verdict")) {
                text += QStringLiteral(", ") + verdict_text(verdict_from_code(*v));
            }
            text += QStringLiteral(".");
        } else {
            // The run's info flag says why (runs since 2026-12-04); older ones leave it to their report.
            QString why;
            for (const RunFlagRow& flag : data_->flags) {
                if (flag.text.rfind("no graph figure: ", 0) == 0) {
                    why = to_qstring(flag.text.substr(17));
                }
            }
            text += why.isEmpty()
                        ? tr(" No graph figure was measured: its calls could not be captured into a CUDA "
                             "graph, or the run was asked for none (the run's report says which).")
                        : tr(" No graph figure was measured: %1.").arg(why.toHtmlEscaped());
        }
        return text;
    }
    QString text =
        tr(" The figure is the graph figure: each side's calls replayed from a CUDA graph, since they "
           "take under 20 µs of device time and a launched call is mostly its launch.");
    if (launched) {
        text += tr(" Launched, as a caller pays each call: %1×").arg(QString::number(*launched, 'f', 3));
        const auto low = data_->summary("launched_ci_low");
        const auto high = data_->summary("launched_ci_high");
        if (low && high) {
            text += tr(" (%1–%2)").arg(QString::number(*low, 'f', 3), QString::number(*high, 'f', 3));
        }
        if (launched_verdict) {
            text += QStringLiteral(", ") + verdict_text(verdict_from_code(*launched_verdict));
        }
        text += QStringLiteral(".");
    }
    return text;
}

QString PerfView::summary_text() const {
    if (!data_) {
        return {};
    }
    const PerfFigures f = compute_perf(*data_);
    const bool trusted = speedup_is_result(data_->run.status);
    QString text = headline();
    if (f.has_figures && !trusted) {
        // Withheld: the figures stay, for inspection, never as a result.
        text += (f.stored ? tr(" Stored figures, for inspection only (not a result): %1.")
                          : tr(" Figures recomputed from its samples, for inspection only (not a result): "
                               "%1."))
                    .arg(inspection_text(f));
    } else if (f.has_figures) {
        QString pooled;
        if (f.per_launch.size() > 1) { // one launch: its interval is the pooled one (less the judge's margin)
            QStringList launches;
            for (const StoredLaunch& l : f.per_launch) {
                QString one = tr("%1×").arg(QString::number(l.speedup, 'f', 3));
                if (l.ci_low && l.ci_high) {
                    one += tr(" (%1–%2)")
                               .arg(QString::number(*l.ci_low, 'f', 3), QString::number(*l.ci_high, 'f', 3));
                }
                launches << one;
            }
            text += tr(" Per launch: %1.").arg(launches.join(QStringLiteral(", ")));
        }
        text += method_text();
        if (!f.stored) {
            text += tr(" (Recomputed from the samples: this run stored no interval.)");
        }
    }
    const QString unreadable = unreadable_timing(*data_);
    const bool interrupted = data_->run.status == RunStatus::Interrupted;
    if (f.has_samples) {
        if (interrupted) {
            text += tr(" The samples it recorded before it stopped are plotted, for inspection.");
        }
        if (data_->world_size() > 1) { // at W=1 the slowest rank is rank 0 by definition
            text += tr(" Slowest rank: reference %1, candidate %2.")
                        .arg(f.slowest_reference_rank)
                        .arg(f.slowest_candidate_rank);
        }
    } else if (!unreadable.isEmpty()) {
        // A damaged table: the run has samples, the store cannot give them.
        text += tr(" <b>The store could not give this run's %1</b>: the plots are empty for that reason, "
                   "not because the run timed nothing.")
                    .arg(unreadable);
    } else if (interrupted) {
        text += tr(" It recorded no samples before it stopped.");
    } else if (f.has_figures) {
        text += tr(" (No samples in the store.)");
    } else if (auto s = data_->summary("speedup"); s && trusted) {
        text = tr("<b>Speedup %1×</b> (stored without an interval; no samples in the store).")
                   .arg(QString::number(*s, 'f', 3));
    } else if (data_->run.mode == RunMode::Perf && !data_->summary("pkb_speedup") && trusted) {
        text = tr("Run %1 stored neither samples nor a speedup.").arg(data_->run.id);
    }
    if (f.has_figures && trusted && data_->summary("pkb_speedup")) {
        PairOutcome pair;
        pair.speedup = f.speedup;
        pair.pkb_speedup = data_->summary("pkb_speedup");
        if (pkb_disagrees(pair)) {
            text += tr(" <b>pkbw and PKB disagree in direction</b> (%1× against PKB's %2×): this run counts "
                       "toward no fast_p with p ≥ 1.")
                        .arg(QString::number(f.speedup, 'f', 3), QString::number(*pair.pkb_speedup, 'f', 3));
        }
    }
    // PKB's own figure beside pkbw's, and for imported PKB runs its per-trial speedups: two identical
    // trials of PKB's protocol can differ by 2x, and a mean alone hides it.
    if (const auto pkb = data_->summary("pkb_speedup")) {
        QStringList trials;
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        std::vector<std::pair<int, double>> per_trial;
        for (const PerfSummaryRow& row : data_->summaries) {
            if (row.rank == -1 && row.statistic.rfind("pkb_speedup.trial_", 0) == 0) {
                per_trial.emplace_back(std::atoi(row.statistic.c_str() + 18), row.value);
            }
        }
        std::sort(per_trial.begin(), per_trial.end());
        for (const auto& [trial, value] : per_trial) {
            trials << tr("trial %1: %2×").arg(trial).arg(QString::number(value, 'g', 3));
            lo = std::min(lo, value);
            hi = std::max(hi, value);
        }
        text += trusted ? tr(" <b>PKB's speedup %1×</b>").arg(QString::number(*pkb, 'f', 3))
                        : tr(" PKB's figure, for inspection as well: %1×").arg(QString::number(*pkb, 'f', 3));
        if (per_trial.size() > 1) {
            text += tr(" (geometric mean of %1 trials; %2; spread %3–%4×, %5× apart)")
                        .arg(per_trial.size())
                        .arg(trials.join(QStringLiteral(", ")))
                        .arg(QString::number(lo, 'g', 3))
                        .arg(QString::number(hi, 'g', 3))
                        .arg(QString::number(lo > 0 ? hi / lo : 0.0, 'f', 2));
        }
        text += QLatin1Char('.');
    }
    const auto busbw = data_->summary("busbw_gbps");
    const auto peak = data_->summary("peak_busbw_gbps");
    if (busbw) {
        text += tr(" Bus bandwidth %1 GB/s").arg(QString::number(*busbw, 'f', 1));
        if (peak && *peak > 0) {
            text +=
                tr(" (%1% of %2 GB/s peak)").arg(QString::number(100 * *busbw / *peak, 'f', 0)).arg(*peak);
        }
        text += QLatin1Char('.');
    }
    return text;
}

} // namespace pkbw::app
