// Inspecting a run's outputs (issue 19): heatmaps on one value range with a difference map, hover
// readout, linked zoom and ticks that fit at any size, the histogram's counts, a stored error map
// alone, the maps reset for the next run. (Trace and sources: tst_inspect.cpp.)
#include "fixtures.h"
#include "heatmapview.h"
#include "mainwindow.h"
#include "pkbw/core/store.h"
#include "runview.h"

#include <QSignalSpy>
#include <QtTest>
#include <cmath>
#include <qcustomplot.h>

using namespace pkbw;
using namespace pkbw::app;
using test::one_eval_run_store;

namespace {

Tensor f32(std::int64_t rows, std::int64_t cols, const std::vector<float>& v) {
    return Tensor::from_bytes(
        DType::F32, {rows, cols},
        std::span(reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float)));
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

class TestInspectMaps : public QObject {
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
            said = said ||
                   e->text().startsWith(QStringLiteral("No error histogram: this run kept its error map"));
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
};

QTEST_MAIN(TestInspectMaps)
#include "tst_inspect_maps.moc"
