// Inspecting a run (issue 19): heatmaps on one value range with a difference map, hover readout,
// linked zoom and ticks that fit; the trace opened on its iterations with a readable ruler, nested
// ranges and a summary by side and rank; aligned sources and logs, found wherever the run went.
// The runs list, stores, generations and perf are in tst_runs.cpp.
#include "fixtures.h"
#include "heatmapview.h"
#include "mainwindow.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/sha256.h"
#include "pkbw/core/store.h"
#include "pkbw/core/trace_store.h"
#include "runsources.h"
#include "runview.h"
#include "sourceview.h"
#include "timelinewidget.h"
#include "traceview.h"

#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>
#include <cmath>
#include <fstream>
#include <qcustomplot.h>

using namespace pkbw;
using namespace pkbw::app;
using test::add_run;
using test::one_eval_run_store;

namespace {

Tensor f32(std::int64_t rows, std::int64_t cols, const std::vector<float>& v) {
    return Tensor::from_bytes(
        DType::F32, {rows, cols},
        std::span(reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float)));
}

// Rank 0 of a traced perf run: a 50 ms perf phase and, inside a 1 ms "trace" phase, one reference
// iteration (100-200 us: gemm 110-150 us on stream 7, an NCCL all-gather 140-180 us on stream 8, so
// 10 of its 40 us overlap compute) and one candidate iteration (300-400 us: push_shard 310-330 us).
RankTrace sample_trace() {
    RankTrace t;
    t.rank = 0;
    t.events = {
        test::trace_event(TraceEventKind::EngineRange, "phase", "perf", 0, 50'000'000),
        test::trace_event(TraceEventKind::EngineRange, "phase", "trace", 50'000, 1'000'000),
        test::trace_event(TraceEventKind::EngineRange, "iteration", "reference/0", 100'000, 200'000),
        test::trace_event(TraceEventKind::Kernel, "", "gemm", 110'000, 150'000, 7),
        test::trace_event(TraceEventKind::Kernel, "", "ncclDevKernel_AllGather_RING_LL", 140'000, 180'000, 8),
        test::trace_event(TraceEventKind::EngineRange, "iteration", "candidate/0", 300'000, 400'000),
        test::trace_event(TraceEventKind::Kernel, "", "push_shard", 310'000, 330'000, 7),
    };
    sort_events(t.events);
    return t;
}

// Why two of `axis`'s tick labels overlap as drawn (each label centred on its tick, as wide as its text
// along a horizontal axis and a line high along a vertical one), or why the axis cannot show that
// they do not (fewer than `min_labels` labels, a tick outside the range); "" when they fit.
QString tick_label_overlap(const QCPAxis* axis, int min_labels) {
    const QVector<double> ticks = axis->tickVector();
    const QVector<QString> labels = axis->tickVectorLabels();
    if (ticks.size() < min_labels || labels.size() != ticks.size()) {
        return QStringLiteral("%1 tick(s), %2 label(s) over %3..%4 on %5 px")
            .arg(ticks.size())
            .arg(labels.size())
            .arg(axis->range().lower)
            .arg(axis->range().upper)
            .arg(axis->orientation() == Qt::Horizontal ? axis->axisRect()->width()
                                                       : axis->axisRect()->height());
    }
    const QFontMetricsF metrics(axis->tickLabelFont());
    const bool horizontal = axis->orientation() == Qt::Horizontal;
    struct Extent {
        double lo, hi;
        QString text;
    };
    std::vector<Extent> extents;
    for (qsizetype i = 0; i < ticks.size(); ++i) {
        const double slack = 1e-9 * axis->range().size(); // rounding of a re-applied scale ratio
        if (ticks[i] < axis->range().lower - slack || ticks[i] > axis->range().upper + slack) {
            return QStringLiteral("tick %1 outside the range %2..%3 (stale ticks)")
                .arg(ticks[i])
                .arg(axis->range().lower)
                .arg(axis->range().upper);
        }
        const double at = axis->coordToPixel(ticks[i]);
        const double half = (horizontal ? metrics.horizontalAdvance(labels[i]) : metrics.height()) / 2;
        extents.push_back({at - half, at + half, labels[i]});
    }
    std::sort(extents.begin(), extents.end(), [](const Extent& a, const Extent& b) { return a.lo < b.lo; });
    for (std::size_t i = 0; i + 1 < extents.size(); ++i) {
        if (extents[i].hi > extents[i + 1].lo) {
            return QStringLiteral("'%1' [%2, %3] overlaps '%4' [%5, %6] on an axis of %7 px")
                .arg(extents[i].text)
                .arg(extents[i].lo)
                .arg(extents[i].hi)
                .arg(extents[i + 1].text)
                .arg(extents[i + 1].lo)
                .arg(extents[i + 1].hi)
                .arg(horizontal ? axis->axisRect()->width() : axis->axisRect()->height());
        }
    }
    return {};
}

} // namespace

class TestInspect : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test")); }

    // --- Heatmaps ---------------------------------------------------------------------------

    void difference_map_shows_a_bias_the_values_hide() {
        std::vector<float> ref(64, 10.0f), cand(64);
        for (int i = 0; i < 64; ++i) {
            cand[static_cast<std::size_t>(i)] =
                10.0f + 0.004f * static_cast<float>(i); // a ramp on a constant
        }
        const DifferenceMap d = difference_map(f32(8, 8, ref), f32(8, 8, cand), 4);
        QCOMPARE(d.diff.rows, 4);
        QCOMPARE(d.diff.cols, 4);
        for (float v : d.diff.values) {
            QVERIFY(v > 0); // every cell holds its block's largest (positive) difference
        }
        QCOMPARE(d.max_diff_index, qint64(63));
        QVERIFY(std::fabs(d.max_abs_diff - (10.0f + 0.004f * 63 - 10.0f)) < 1e-6);
        QCOMPARE(d.nonfinite, qint64(0));
    }

    void value_maps_share_one_range_and_readout_gives_the_element() {
        std::vector<float> ref(16, 1.0f), cand(16, 1.0f);
        for (int r = 0; r < 4; ++r) {
            cand[static_cast<std::size_t>(r * 4 + 1)] = 1.5f;
        }
        cand[11] = std::nanf("");
        bool diverging = true;
        const HeatmapSet set = compute_heatmaps(f32(4, 4, ref), f32(4, 4, cand), 0.01, 0.0);
        const auto [lo, hi] = shared_value_range(set.ref, set.cand, &diverging);
        QCOMPARE(lo, 1.0);
        QCOMPARE(hi, 1.5);
        QVERIFY(!diverging);

        HeatmapView view;
        view.resize(900, 800);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.show_set(set);
        auto* ref_map = qobject_cast<QCPColorMap*>(view.plots()[0]->plottable(0));
        auto* cand_map = qobject_cast<QCPColorMap*>(view.plots()[1]->plottable(0));
        QVERIFY(ref_map && cand_map);
        QCOMPARE(ref_map->dataRange(), cand_map->dataRange());
        // Equal values, equal colours.
        QCOMPARE(ref_map->gradient().color(1.0, ref_map->dataRange()),
                 cand_map->gradient().color(1.0, cand_map->dataRange()));
        QVERIFY(view.values_shown());
        const QString readout = view.readout_at(2, 1);
        QVERIFY2(readout.contains(QStringLiteral("[2, 1] (element 9)")), qPrintable(readout));
        QVERIFY2(readout.contains(QStringLiteral("reference 1, candidate 1.5, difference 0.5, ratio 50")),
                 qPrintable(readout));
        const QString summary = view.summary_text();
        QVERIFY2(summary.contains(QStringLiteral("max |diff| 0.5 at [0, 1]")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("worst at [2, 3] (reference 1, candidate nan), first at [0, "
                                                 "1] (reference 1, candidate 1.5)")),
                 qPrintable(summary));

        // Linked zoom: a zoom in one map is the zoom of all four.
        view.plots()[0]->xAxis->setRange(1, 2);
        for (int i = 1; i < 4; ++i) {
            QCOMPARE(view.plots()[i]->xAxis->range(), QCPRange(1, 2));
        }
        // Kept aspect once laid out: the same data units per pixel on both axes.
        view.show_set(set);
        QCustomPlot* plot = view.plots()[3];
        plot->replot(QCustomPlot::rpImmediateRefresh);
        const QRect r = plot->axisRect()->rect();
        const double x_per_px = plot->xAxis->range().size() / r.width();
        const double y_per_px = plot->yAxis->range().size() / r.height();
        QVERIFY2(std::fabs(x_per_px - y_per_px) < 0.02 * x_per_px,
                 qPrintable(QString::number(x_per_px / y_per_px)));

        // A new run: nothing of this one survives.
        view.clear(QStringLiteral("next"));
        QVERIFY(!view.values_shown());
        QCOMPARE(ref_map->dataRange(), QCPRange(0, 1));
        QCOMPARE(view.plots()[3]->xAxis->range(), QCPRange(0, 1));
    }

    // Review defect 26: at any size (the maps at their minimum, about 250 px wide, the default) and
    // for a wide and a narrow tensor, no two tick labels of a map's axes (nor the histogram's) overlap.
    void tick_labels_never_overlap_on_narrow_maps() {
        std::vector<float> wide(4 * 8192), narrow(5 * 3);
        for (std::size_t i = 0; i < wide.size(); ++i) {
            wide[i] = static_cast<float>(i % 97);
        }
        for (std::size_t i = 0; i < narrow.size(); ++i) {
            narrow[i] = static_cast<float>(i);
        }
        const HeatmapSet sets[] = {compute_heatmaps(f32(4, 8192, wide), f32(4, 8192, wide), 0.01, 0.01),
                                   compute_heatmaps(f32(5, 3, narrow), f32(5, 3, narrow), 0.01, 0.01)};
        HeatmapView view;
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const QSize sizes[] = {view.minimumSizeHint(), QSize(540, 640), QSize(900, 800)};
        for (const HeatmapSet& set : sets) {
            for (const QSize& size : sizes) {
                view.resize(size);
                view.show_set(set);
                QTest::qWait(100); // the layout, the aspect fit and the replots they queue
                // Settled: no plot keeps replotting (stale ticks queue one replot, not a loop).
                std::vector<std::unique_ptr<QSignalSpy>> replots;
                for (QCustomPlot* plot : view.plots()) {
                    replots.push_back(std::make_unique<QSignalSpy>(plot, &QCustomPlot::afterReplot));
                }
                QTest::qWait(150);
                for (const auto& spy : replots) {
                    QCOMPARE(spy->count(), 0);
                }
                const QString where = QStringLiteral("%1 columns at %2x%3: ")
                                          .arg(set.error.ratio.source_cols)
                                          .arg(view.width())
                                          .arg(view.height());
                QVERIFY2(view.plots()[0]->width() < 200 || size != sizes[0],
                         qPrintable(where + QStringLiteral("the maps are not narrow")));
                // At least one label on every axis; two where the axis is long enough for them: the
                // columns (at the minimum a column axis is ~35 px, room for one "8192" only) and the
                // 5 rows of the small tensor (the wide one's 4 rows are a sliver of the square-cell
                // y range, so one label at that scale).
                const bool roomy = size != sizes[0];
                const bool small = set.error.ratio.source_cols == 3;
                for (QCustomPlot* plot : view.plots()) {
                    const bool histogram = plot == view.plots().last();
                    const std::pair<const QCPAxis*, int> axes[] = {
                        {plot->xAxis, roomy ? 2 : 1}, {plot->yAxis, roomy && small && !histogram ? 2 : 1}};
                    std::vector<std::pair<const QCPAxis*, int>> checked(std::begin(axes), std::end(axes));
                    if (auto* map = qobject_cast<QCPColorMap*>(plot->plottable(0));
                        map && plot != view.plots()[3]) {
                        checked.push_back(
                            {map->colorScale()->axis(), roomy ? 2 : 1}); // value and difference scales
                    }
                    for (const auto& [axis, min_labels] : checked) {
                        const QString overlap = tick_label_overlap(axis, min_labels);
                        QVERIFY2(overlap.isEmpty(),
                                 qPrintable(where + plot->objectName() + QLatin1Char(' ') + axis->label() +
                                            QStringLiteral(": ") + overlap));
                    }
                }
            }
        }
    }

    // Review defect 26 where the review saw it: the Run tab of a 1024x700 window. Every axis of the
    // fixture run's maps and histogram shows a label, none overlapping.
    void run_tab_at_1024x700_has_no_overlapping_ticks() {
        const auto [path, id] = one_eval_run_store(QStringLiteral("narrow-ticks"));
        MainWindow window;
        window.resize(1024, 700);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QSignalSpy opened(&window, &MainWindow::store_opened);
        window.open_store(path);
        QVERIFY(opened.wait(5000));
        QSignalSpy heatmaps(window.run_view(), &RunView::heatmaps_ready);
        window.open_run(id);
        QVERIFY(heatmaps.wait(10000));
        QTest::qWait(200); // the layout, the aspect fit and the replots they queue
        HeatmapView* view = window.run_view()->heatmaps();
        QVERIFY(view->values_shown());
        for (QCustomPlot* plot : view->plots()) {
            for (const QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
                const QString overlap = tick_label_overlap(axis, 1);
                QVERIFY2(overlap.isEmpty(), qPrintable(QStringLiteral("%1 px wide %2 %3: %4")
                                                           .arg(plot->width())
                                                           .arg(plot->objectName(), axis->label(), overlap)));
            }
        }
    }

    // Review defect 25: the histogram bins the passing and failing ratios and says how many elements
    // it cannot bin (exact matches, ratio 0; non-finite ones, ratio +inf), also for a NaN-only cell.
    void histogram_counts_what_it_cannot_bin() {
        auto histogram_title = [](HeatmapView& view) {
            for (auto* e : view.findChildren<QCPTextElement*>()) {
                if (e->text().startsWith(QStringLiteral("Error ratio histogram")))
                    return e->text();
            }
            return QString();
        };
        auto binned = [](HeatmapView& view) {
            double total = 0;
            for (auto* bars : view.findChildren<QCPBars*>()) {
                for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
                    total += it->value;
            }
            return total;
        };
        std::vector<float> ref(16, 1.0f), cand(16, 1.0f);
        cand[1] = 1.5f;   // ratio 50
        cand[6] = 1.004f; // ratio 0.4: passes, binned
        cand[11] = std::nanf("");
        HeatmapView view;
        view.resize(900, 800);
        view.show_set(compute_heatmaps(f32(4, 4, ref), f32(4, 4, cand), 0.01, 0.0));
        QVERIFY2(histogram_title(view).contains(QStringLiteral("13 exact (ratio 0) and 1 non-finite")),
                 qPrintable(histogram_title(view)));
        QCOMPARE(binned(view), 2.0);
        std::vector<float> nan(16, std::nanf(""));
        view.show_set(compute_heatmaps(f32(4, 4, ref), f32(4, 4, nan), 0.01, 0.0));
        QVERIFY2(histogram_title(view).contains(QStringLiteral("0 exact (ratio 0) and 16 non-finite")),
                 qPrintable(histogram_title(view)));
        QCOMPARE(binned(view), 0.0);
    }

    void stored_error_map_alone_hides_the_value_maps() {
        TensorResultRow row;
        row.name = "out";
        row.numel = 16;
        row.error_map.source_rows = row.error_map.source_cols = 4;
        row.error_map.rows = row.error_map.cols = 4;
        row.error_map.ratio.assign(16, 0.5f);
        HeatmapView view;
        QVERIFY(!view.ratio_shown()); // nothing before a set arrives
        view.show_set(heatmaps_from_row(row, 0.01, 0.01));
        QVERIFY(!view.values_shown());
        QVERIFY(view.ratio_shown());
        QVERIFY(view.readout_at(1, 1).contains(QStringLiteral("cell ratio 0.5")));
        // No element counts without the outputs (review point 18: "0 exact and 0 non-finite" beside a
        // summary of exact elements): the histogram says why it is empty.
        bool said = false;
        for (auto* e : view.findChildren<QCPTextElement*>()) {
            said = said || e->text().startsWith(QStringLiteral("No error histogram: this run kept its error map"));
            QVERIFY2(!e->text().contains(QStringLiteral("exact (ratio 0)")), qPrintable(e->text()));
        }
        QVERIFY(said);
        // A cell with no compared outputs (review defect 15): no map at all, only the message.
        view.clear(QStringLiteral("rank 0, trial 0: no compared outputs"));
        QVERIFY(!view.values_shown());
        QVERIFY(!view.ratio_shown());
    }

    // Review defect 14 through the Run tab (HeatmapView::clear alone is tested above): opening a run
    // without outputs after one with them leaves none of the first run's maps, axes or colours.
    void the_run_view_resets_the_maps_for_the_next_run() {
        const QString path = test::temp_path(QStringLiteral("next_run.db"));
        test::FixtureRun eval;
        std::int64_t bare = 0;
        {
            Store store = Store::open(path.toStdString());
            eval = test::add_eval_run(store, test::temp_path(QStringLiteral("next_run_dir")).toStdString());
            // A run with nothing to compare (a dryrun with no trials recorded).
            RunRecord run;
            run.problem_stem = "calibrate";
            run.mode = RunMode::Dryrun;
            run.trials = 0;
            bare = store.begin_run(run);
            store.finish_run(bare, RunStatus::Pass, 0, "");
        }
        RunView view;
        view.resize(1400, 900);
        view.set_store(path);
        QSignalSpy heatmaps(&view, &RunView::heatmaps_ready);
        view.open_run(eval.run_id);
        QVERIFY(heatmaps.wait(20000) || heatmaps.count() > 0);
        QVERIFY2(view.heatmaps()->values_shown(), qPrintable(view.heatmaps()->summary_text()));
        auto* ref_map = qobject_cast<QCPColorMap*>(view.heatmaps()->plots()[0]->plottable(0));
        QVERIFY(ref_map);
        QVERIFY(ref_map->dataRange() != QCPRange(0, 1)); // the fixture's values reach 15
        QSignalSpy loaded(&view, &RunView::run_loaded);
        view.open_run(bare);
        QVERIFY(loaded.wait(10000) || loaded.count() > 0);
        QTRY_VERIFY_WITH_TIMEOUT(!view.heatmaps()->values_shown(), 5000);
        QVERIFY(!view.heatmaps()->ratio_shown());
        QCOMPARE(ref_map->dataRange(), QCPRange(0, 1));
        QCOMPARE(view.heatmaps()->plots()[3]->xAxis->range(), QCPRange(0, 1));
        QVERIFY(!view.heatmaps()->summary_text().contains(QStringLiteral("max |diff|")));
    }

    // --- Trace --------------------------------------------------------------------------------

    void timeline_opens_on_iterations_with_a_readable_ruler() {
        auto data = std::make_shared<const TimelineData>(timeline_from_traces({sample_trace()}));
        QCOMPARE(data->iterations.size(), std::size_t(2));
        // The engine lane: the iterations nest inside the "trace" phase, itself inside "perf".
        const auto lane = std::find_if(data->lanes.begin(), data->lanes.end(),
                                       [](const TimelineLane& l) { return l.name == "engine"; });
        QVERIFY(lane != data->lanes.end());
        QCOMPARE(lane->depths, 3);
        TimelineWidget w;
        w.resize(1100, 400);
        w.set_trace(data);
        QVERIFY(std::fabs(w.window_begin() - 94.0) < 1e-6); // 100-400 us, 2% margins
        QVERIFY(std::fabs(w.window_end() - 406.0) < 1e-6);
        QCOMPARE(w.origin_us(), 100.0);
        auto check_unique = [&](const char* where) {
            const QStringList labels = w.tick_labels();
            QVERIFY2(labels.size() >= 3, where);
            QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), labels.size());
        };
        check_unique("iterations");
        QVERIFY(w.tick_labels().contains(QStringLiteral("0 µs")));
        // Deep in the perf phase, zoomed to 10 ns: still distinct labels.
        w.set_window(100 + 12'345.678, 100 + 12'345.688);
        check_unique("10 ns");
        QVERIFY2(w.tick_labels().first().contains(QStringLiteral("12345")),
                 qPrintable(w.tick_labels().first()));
        w.set_window(0, 50'000);
        check_unique("whole");
        // Zoom to an event: the candidate's kernel.
        w.set_window(94, 406);
        w.select_area(300, 400);
        QVERIFY(w.zoom_to_selection());
        QVERIFY(std::fabs(w.window_begin() - 295) < 1e-6 && std::fabs(w.window_end() - 405) < 1e-6);
    }

    // Double-clicking an event zooms to it: the window becomes the event's span with the quarter-length
    // margins zoom_to_selection gives an event, even while an area is selected (the area is kept); a
    // double click on no event leaves the window alone.
    void double_click_zooms_to_the_event_under_the_cursor() {
        auto data = std::make_shared<const TimelineData>(timeline_from_traces({sample_trace()}));
        TimelineWidget w;
        w.resize(1100, 400);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.set_trace(data);
        w.repaint(); // lays out the lanes
        // The gemm kernel (110-150 us): its lane, row and the pixels where it is hit.
        std::size_t gemm_lane = SIZE_MAX;
        int depth = 0;
        for (std::size_t li = 0; li < data->lanes.size(); ++li) {
            for (const TimelineEvent& e : data->lanes[li].events) {
                if (data->names[e.name] == "gemm") {
                    gemm_lane = li;
                    depth = e.depth;
                }
            }
        }
        QVERIFY(gemm_lane != SIZE_MAX);
        const int row_height = w.lane_height(gemm_lane) / data->lanes[gemm_lane].depths;
        const int y = w.lane_top(gemm_lane) + depth * row_height + row_height / 2;
        int first_x = -1, last_x = -1;
        for (int x = 0; x < w.width(); ++x) {
            std::size_t lane = 0, event = 0;
            if (w.hit(QPointF(x, y), &lane, &event) && lane == gemm_lane &&
                data->names[data->lanes[lane].events[event].name] == "gemm") {
                first_x = first_x < 0 ? x : first_x;
                last_x = x;
            }
        }
        QVERIFY2(last_x - first_x > 20,
                 qPrintable(QStringLiteral("gemm at x %1..%2").arg(first_x).arg(last_x)));
        const QPoint at((first_x + last_x) / 2, y);

        w.select_area(300, 400); // an area is selected: the double click still means the event
        QSignalSpy selected(&w, &TimelineWidget::selection_changed);
        QTest::mouseDClick(&w, Qt::LeftButton, Qt::NoModifier, at);
        QVERIFY(!selected.isEmpty());
        QVERIFY2(selected.last().at(0).toString().contains(QStringLiteral("gemm")),
                 qPrintable(selected.last().at(0).toString()));
        // 110-150 us with a quarter of its 40 us on each side.
        QVERIFY2(std::fabs(w.window_begin() - 100) < 1e-6 && std::fabs(w.window_end() - 160) < 1e-6,
                 qPrintable(QStringLiteral("%1..%2").arg(w.window_begin()).arg(w.window_end())));
        QCOMPARE(w.area(), std::make_pair(300.0, 400.0));

        // Where no event is (the label column), the window stays.
        QTest::mouseDClick(&w, Qt::LeftButton, Qt::NoModifier, QPoint(5, y));
        QVERIFY(std::fabs(w.window_begin() - 100) < 1e-6 && std::fabs(w.window_end() - 160) < 1e-6);
    }

    void summary_by_side_and_rank_with_overlap() {
        const TraceSummary s = summarize_trace({sample_trace()});
        QCOMPARE(s.overlaps.size(), std::size_t(2));
        QCOMPARE(QString::fromStdString(s.overlaps[0].side), QStringLiteral("reference"));
        QCOMPARE(s.overlaps[0].communication_us, 40.0);
        QCOMPARE(s.overlaps[0].overlap_us, 10.0);
        QCOMPARE(s.overlaps[0].overlap_percent, 25.0);
        QCOMPARE(s.overlaps[1].communication_us, 0.0);
        QCOMPARE(s.rows.size(), std::size_t(3));
        QCOMPARE(QString::fromStdString(s.rows[0].side), QStringLiteral("reference"));
        QCOMPARE(s.rows[0].count, qint64(1));
        QCOMPARE(s.rows[0].total_us, 40.0);
        QCOMPARE(s.rows[0].percent_of_iteration, 40.0);
        QCOMPARE(QString::fromStdString(s.rows[2].name), QStringLiteral("push_shard"));
        QCOMPARE(s.rows[2].percent_of_iteration, 20.0);
        // A selection holding the candidate's iteration only.
        const TraceSummary c =
            summarize_trace({sample_trace()}, std::pair<std::int64_t, std::int64_t>{250'000, 450'000});
        QCOMPARE(c.rows.size(), std::size_t(1));
        QCOMPARE(QString::fromStdString(c.rows[0].side), QStringLiteral("candidate"));
    }

    void trace_view_from_the_store_and_why_none() {
        const QString path = test::temp_path(QStringLiteral("traced.db"));
        std::int64_t traced = 0, python = 0, plain = 0;
        {
            Store store = Store::open(path.toStdString());
            RunRecord run;
            run.problem_stem = "2_allgather";
            run.mode = RunMode::Perf;
            run.backend = "host";
            run.command_line = {"pkbw", "perf", "--trace"};
            traced = store.begin_run(run);
            store.finish_run(traced, RunStatus::Pass, 0, "");
            store_run_traces(store, traced, {sample_trace()});
            run.backend = "pkb-cuda";
            run.solution_path = "solutions_cuda/2_allgather.py";
            python = store.begin_run(run);
            store.finish_run(python, RunStatus::Pass, 0, "");
            run.command_line = {"pkbw", "perf"};
            plain = store.begin_run(run);
            store.finish_run(plain, RunStatus::Pass, 0, "");
        }
        TraceView view;
        view.resize(1200, 800);
        view.set_store(path);
        QSignalSpy loaded(&view, &TraceView::loaded);
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), traced)));
        QVERIFY(loaded.wait(5000));
        QCOMPARE(view.summary_table()->rowCount(), 3);
        QCOMPARE(view.overlap_table()->rowCount(), 2);
        QCOMPARE(view.overlap_table()->item(0, 6)->text(), QStringLiteral("25.0"));
        // The GPU busy 110-180 µs of the reference's 100 µs iteration, 20 of the candidate's 100.
        QCOMPARE(view.overlap_table()->item(0, 8)->text(), QStringLiteral("70.0"));
        QCOMPARE(view.overlap_table()->item(1, 8)->text(), QStringLiteral("20.0"));
        QVERIFY(view.overlap_table()->item(0, 8)->toolTip().endsWith(QStringLiteral(": 70.0")));
        QVERIFY(std::fabs(view.timeline()->window_begin() - 94.0) < 1e-6);
        // Ctrl+drag selection -> the summary of the selection.
        view.timeline()->select_area(250, 450);
        QCOMPARE(view.summary_table()->rowCount(), 1);

        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), python)));
        QTRY_VERIFY_WITH_TIMEOUT(view.info_text().contains(QStringLiteral("PKB Python ranks")), 5000);
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), plain)));
        QTRY_VERIFY_WITH_TIMEOUT(view.info_text().contains(QStringLiteral("not run with --trace")), 5000);
    }

    // --- Sources ------------------------------------------------------------------------------

    void sources_aligned_with_line_numbers() {
        SourceView view;
        view.set_sources(QStringLiteral("ref"), QStringLiteral("int a;\nint b;\nint c;"),
                         QStringLiteral("cand"), QStringLiteral("int a;\nfloat b;\nint c;\nint d;"),
                         QStringLiteral("solution.cu(2): error: bad\nsolution.cu:4:5: error: worse\n"));
        const QStringList left = view.shown_left().split(QLatin1Char('\n'));
        const QStringList right = view.shown_right().split(QLatin1Char('\n'));
        QCOMPARE(left.size(), right.size());
        QCOMPARE(left, (QStringList{QStringLiteral("1  int a;"), QStringLiteral("2  int b;"), QString(),
                                    QStringLiteral("3  int c;"), QString()}));
        QCOMPARE(right, (QStringList{QStringLiteral("1  int a;"), QString(), QStringLiteral("2  float b;"),
                                     QStringLiteral("3  int c;"), QStringLiteral("4  int d;")}));
        QCOMPARE(view.diagnostics().size(), 2); // every diagnostic, not the first
        QCOMPARE(view.marked_lines(false), 2);
        QCOMPARE(view.marked_lines(true), 0);
        // The reference's compile log marks the reference's lines, never the candidate's (audit:
        // its line 1 used to tint the candidate's line 1).
        view.set_sources(QStringLiteral("ref"), QStringLiteral("int a;\nint b;\nint c;"),
                         QStringLiteral("cand"), QStringLiteral("int a;\nfloat b;\nint c;\nint d;"),
                         QStringLiteral("solution.cu(2): error: bad\n"), QString(), QString(),
                         QStringLiteral("reference.cu:3:1: warning: unused\n"));
        QCOMPARE(view.diagnostics().size(), 2);
        QCOMPARE(view.marked_lines(false), 1);
        QCOMPARE(view.marked_lines(true), 1);
        QVERIFY(view.diagnostics().at(1).reference && view.diagnostics().at(1).line == 3);
        // A missing candidate: no diff against an empty text.
        view.set_sources(QStringLiteral("ref"), QStringLiteral("int a;\n"), QString(), QString(), QString(),
                         QString(), QStringLiteral("sol.cu: not found"));
        QCOMPARE(view.deleted_lines(), 0);
        QCOMPARE(view.shown_right(), QStringLiteral("sol.cu: not found"));
    }

    void run_sources_follow_the_run_not_the_gui() {
        const QString root = test::temp_path(QStringLiteral("moved"));
        const std::filesystem::path dir = root.toStdString();
        std::filesystem::create_directories(dir / "runs" / "run_1");
        std::filesystem::create_directories(dir / "samples");
        std::ofstream(dir / "ref.py") << "def reference():\n    pass\n";
        std::ofstream(dir / "samples" / "sol.cu") << "__global__ void k() {}\n";
        std::ofstream(dir / "runs" / "run_1" / "rank_1.log") << "rank one\n";
        std::ofstream(dir / "runs" / "run_1" / "rank_0.log") << "rank zero\n";
        std::ofstream(dir / "runs" / "run_1" / "compile_candidate.log")
            << "sol.cu(1): error: a\nsol.cu(1): error: b\n";
        std::ofstream(dir / "runs" / "run_1" / "config.json")
            << nlohmann::json{{"pkb", {{"reference_file", (dir / "ref.py").string()}}}}.dump();
        RunData data;
        data.run.run_dir = (dir / "runs" / "run_1").string();
        data.run.solution_path = "samples/sol.cu"; // relative: found beside the store, not in the GUI's cwd
        data.run.solution_sha256 = sha256_hex("something else");
        const RunSources s = load_run_sources(data, dir / "runs.db", {});
        QVERIFY2(s.reference.found(), s.reference.error.c_str());
        QVERIFY(s.reference.text.find("def reference") != std::string::npos);
        QVERIFY2(s.candidate.found(), s.candidate.error.c_str());
        QVERIFY(s.candidate.note.find("edited since the run") != std::string::npos);
        QCOMPARE(s.logs.size(), std::size_t(3));
        QCOMPARE(QString::fromStdString(s.logs[0].name), QStringLiteral("compile_candidate.log"));
        QCOMPARE(QString::fromStdString(s.logs[1].name), QStringLiteral("rank_0.log"));
        QCOMPARE(QString::fromStdString(s.logs[2].name), QStringLiteral("rank_1.log"));
    }

    // A recorded run's archived source is what the Sources tab shows, even when the file is gone.
    void archived_source_is_shown_after_the_file_is_gone() {
        const QString root = test::temp_path(QStringLiteral("archived"));
        const std::filesystem::path dir = root.toStdString();
        std::filesystem::create_directories(dir / "runs" / "run_1");
        const std::filesystem::path solution = dir / "candidate.cu";
        std::ofstream(solution) << "// the code that ran\n";
        std::int64_t id = 0;
        {
            Store store = Store::open((dir / "runs.db").string());
            RunRecord run;
            run.problem_stem = "1_allreduce";
            run.backend = "host";
            run.solution_path = solution.string();
            run.run_dir = (dir / "runs" / "run_1").string();
            id = store.begin_run(run);
            QVERIFY(!archive_file(store, id, file_role::kCandidateSource, solution).empty());
        }
        std::ofstream(solution) << "// edited after the run\n";
        RunData data;
        data.from_store = true; // run `id` of that store (a run folder's number is never looked up)
        data.run.id = id;
        data.run.solution_path = solution.string();
        data.run.run_dir = (dir / "runs" / "run_1").string();
        const RunSources s = load_run_sources(data, dir / "runs.db", {});
        QVERIFY2(s.candidate.found(), s.candidate.error.c_str());
        QVERIFY(s.candidate.text.find("the code that ran") != std::string::npos);
        QVERIFY(s.candidate.note.find("archived in the store") != std::string::npos);
    }

    // An imported PKB run records its outputs per side (outputs_reference / outputs_candidate, .pt
    // files in PKB's layout): the heatmaps and the tolerance explorer find them there.
    void imported_outputs_are_found_by_side() {
        RunData data;
        data.run.run_dir = "/nonexistent/run";
        data.artifacts.push_back({0, 1, 1, 0, "outputs_reference", "/logs/reference/trial_1/rank_0.pt"});
        data.artifacts.push_back({0, 1, 1, 0, "outputs_candidate", "/logs/cuda/trial_1/rank_0.pt"});
        QCOMPARE(QString::fromStdString(output_path(data, 1, 0, Side::Reference).string()),
                 QStringLiteral("/logs/reference/trial_1/rank_0.pt"));
        QCOMPARE(QString::fromStdString(output_path(data, 1, 0, Side::Candidate).string()),
                 QStringLiteral("/logs/cuda/trial_1/rank_0.pt"));
        // A trial without an artifact falls back to the native layout under the run folder.
        QCOMPARE(QString::fromStdString(output_path(data, 0, 0, Side::Candidate).string()),
                 QStringLiteral("/nonexistent/run/outputs/trial_0/rank_0_candidate.safetensors"));
    }

    // Review defect 10: an imported PKB run whose .pt files are gone is told so, never given pkbw's
    // --keep-outputs advice (PKB made those outputs, not pkbw); a native run's recorded outputs that
    // are gone name the file.
    void missing_outputs_hint_names_the_cause() {
        RunData imported;
        imported.run.backend = "pkb-cuda";
        imported.run.command_line = {"pkbw", "import-pkb", "/logs"};
        imported.artifacts.push_back(
            {0, 1, 0, 0, "outputs_reference", "/gone/logs/reference/trial_0/rank_0.pt"});
        QString text = no_outputs_text(imported);
        QVERIFY2(text.contains(QStringLiteral("import-pkb")) &&
                     text.contains(QStringLiteral("/gone/logs/reference/trial_0/rank_0.pt")),
                 qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("--keep-outputs")), qPrintable(text));
        imported.artifacts.clear();
        text = no_outputs_text(imported);
        QVERIFY2(text.contains(QStringLiteral("held no .pt outputs")), qPrintable(text));
        QVERIFY(!text.contains(QStringLiteral("--keep-outputs")));

        RunData native;
        native.run.backend = "cuda";
        native.artifacts.push_back(
            {0, 2, 1, 0, "outputs_candidate", "/gone/runs/r/outputs/trial_1/rank_0_candidate.safetensors"});
        text = no_outputs_text(native);
        QVERIFY2(text.contains(QStringLiteral("rank_0_candidate.safetensors")) &&
                     text.contains(QStringLiteral("run folder")),
                 qPrintable(text));
        native.artifacts.clear();
        QVERIFY(no_outputs_text(native).contains(QStringLiteral("--keep-outputs")));

        // The Run tab's tolerance explorer says it for an imported run from a store.
        const QString path = test::temp_path(QStringLiteral("imported_gone.db"));
        std::int64_t id = 0;
        {
            Store store = Store::open(path.toStdString());
            id = add_run(store, "2_allgather", "solutions_cuda_bf16_none_openai_gpt-5.5", RunMode::Eval,
                         RunStatus::Mismatch, std::nullopt, 30, "pkb-cuda");
            store.add_artifact({0, id, 0, 0, "outputs_reference", "/gone/logs/reference/trial_0/rank_0.pt"});
            store.add_artifact({0, id, 0, 0, "outputs_candidate", "/gone/logs/cuda/trial_0/rank_0.pt"});
        }
        RunView view;
        view.set_store(path);
        QSignalSpy rescored(&view, &RunView::rescore_ready);
        view.open_run(id);
        QTRY_VERIFY_WITH_TIMEOUT(rescored.count() > 0, 5000);
        QVERIFY2(view.rescore_text().contains(QStringLiteral("import-pkb")), qPrintable(view.rescore_text()));
        QVERIFY2(!view.rescore_text().contains(QStringLiteral("--keep-outputs")),
                 qPrintable(view.rescore_text()));
    }
};

QTEST_MAIN(TestInspect)
#include "tst_inspect.moc"
