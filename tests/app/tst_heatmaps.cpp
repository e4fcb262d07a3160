// Heatmaps at element resolution and on readable colour scales. Review point 14: a zoomed map is
// pooled again from the tensors for the region in view (a 1024² output pooled to 64² resolves single
// elements when zoomed to 40×40), and Home goes back to the whole tensor's maps. Review point 15: a
// heavy-tailed output is drawn on its 1st-99th percentile (said in the summary) unless the full range
// is chosen, and an all-zero finite difference gets a readable ±1 that says so, not ±1e-30. Symlog,
// chosen, draws values and differences linear near 0 and logarithmic beyond, labelled in values.
#include "fittingticker.h"
#include "heatmapview.h"

#include <QComboBox>
#include <QtTest>
#include <cmath>
#include <qcustomplot.h>
#include <span>

using namespace pkbw;
using namespace pkbw::app;

namespace {

Tensor f32(std::int64_t rows, std::int64_t cols, const std::vector<float>& v) {
    return Tensor::from_bytes(
        DType::F32, {rows, cols},
        std::span(reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(float)));
}

// Element (r, c) of a 1024² tensor: distinct per element, so a pooled cell and an element differ.
float element(std::int64_t r, std::int64_t c) {
    return static_cast<float>(r * 1024 + c) / 1024.0f;
}

QCPColorMap* map_of(const HeatmapView& view, int which) {
    return qobject_cast<QCPColorMap*>(view.plots().at(which)->plottable(0));
}

} // namespace

class TestHeatmaps : public QObject {
    Q_OBJECT
private slots:
    void zoom_resolves_single_elements_and_home_goes_back() {
        std::vector<float> ref(1024 * 1024), cand(1024 * 1024);
        for (std::int64_t r = 0; r < 1024; ++r) {
            for (std::int64_t c = 0; c < 1024; ++c) {
                ref[static_cast<std::size_t>(r * 1024 + c)] = element(r, c);
                cand[static_cast<std::size_t>(r * 1024 + c)] =
                    element(r, c) + (r == 210 && c == 120 ? 0.5f : 0);
            }
        }
        HeatmapView view;
        view.resize(900, 900);
        view.show();
        view.show_set(compute_heatmaps(f32(1024, 1024, ref), f32(1024, 1024, cand), 0.01, 0.0, 64));
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCOMPARE(map_of(view, 0)->data()->keySize(), 64); // 16×16 elements per cell
        QVERIFY(!view.region_shown());
        // A zoom into [200, 240) × [100, 140), as the wheel leaves it.
        QCustomPlot* plot = view.plots().at(0);
        plot->xAxis->setRange(100, 140);
        plot->yAxis->setRange(200, 240);
        QVERIFY(view.zoomed());
        QTRY_VERIFY_WITH_TIMEOUT(view.region_shown(), 5000);
        // x as zoomed; y about its centre, as square cells on this plot's shape give it.
        const ViewRegion r = view.shown_region();
        QCOMPARE(r.col0, std::int64_t(100));
        QCOMPARE(r.col1, std::int64_t(140));
        QVERIFY(r.row0 <= 210 && r.row1 > 215 && r.row1 - r.row0 <= 64);
        for (int which : {0, 1, 2, 3}) {
            QCOMPARE(map_of(view, which)->data()->keySize(), static_cast<int>(r.col1 - r.col0));
            QCOMPARE(map_of(view, which)->data()->valueSize(), static_cast<int>(r.row1 - r.row0));
        }
        // Cells are elements now: the reference map holds element (215, 107) itself at its centre,
        // and the difference map the 0.5 at (210, 120) in its own cell.
        QCOMPARE(map_of(view, 0)->data()->data(107.5, 215.5), static_cast<double>(element(215, 107)));
        QCOMPARE(map_of(view, 2)->data()->data(120.5, 210.5), 0.5);
        QCOMPARE(map_of(view, 2)->data()->data(121.5, 210.5), 0.0);
        // The other maps show the same region (linked), and the readout still names the element.
        QCOMPARE(view.plots().at(3)->xAxis->range().lower, 100.0);
        QVERIFY(view.readout_at(210, 120).contains(QStringLiteral("difference 0.5")));
        // Home: the whole tensor's pooled maps again.
        view.reset_view();
        QVERIFY(!view.region_shown());
        QCOMPARE(map_of(view, 0)->data()->keySize(), 64);
        QVERIFY(!view.zoomed());
    }

    // A vector output ([1, 1024]: problem 46's on the H200) showed no map at all: QCPColorMap gives a
    // single row no height, and square cells made the row under a pixel high anyway.
    void a_single_row_output_is_drawn_at_a_readable_height() {
        std::vector<float> ref(1024), cand(1024);
        for (std::size_t c = 0; c < ref.size(); ++c) {
            ref[c] = static_cast<float>(c);
            cand[c] = static_cast<float>(c) + (c == 329 ? 2.0f : 0.0f);
        }
        HeatmapView view;
        view.resize(1200, 700);
        view.show();
        view.show_set(compute_heatmaps(f32(1, 1024, ref), f32(1, 1024, cand), 0.01, 0.0, 256));
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        for (int which : {0, 1, 2, 3}) {
            QCustomPlot* plot = view.plots().at(which);
            QTRY_VERIFY_WITH_TIMEOUT(
                std::abs(plot->yAxis->coordToPixel(1) - plot->yAxis->coordToPixel(0)) >= 40, 3000);
            QCOMPARE(map_of(view, which)->data()->valueSize(), 2); // the one row, drawn twice
        }
        // Both drawn rows hold the row's values: the reference's pooled cell of elements 328-331 (max 331).
        QCOMPARE(map_of(view, 0)->data()->data(330.0, 0.25), 331.0);
        QCOMPARE(map_of(view, 0)->data()->data(330.0, 0.75), 331.0);
        QCOMPARE(map_of(view, 2)->data()->data(330.0, 0.5), 2.0);
    }

    void heavy_tails_are_clipped_to_percentiles_unless_asked() {
        // Typical values about ±1e5, and a few elements at 2e6 (the review's MoE LoRA output).
        std::vector<float> ref(64 * 64);
        for (std::size_t i = 0; i < ref.size(); ++i) {
            ref[i] = static_cast<float>((static_cast<int>(i * 7919 % 2001) - 1000) * 100);
        }
        ref[5] = 2e6f;
        ref[900] = -2e6f;
        HeatmapView view;
        view.show_set(compute_heatmaps(f32(64, 64, ref), f32(64, 64, ref), 0.01, 0.01));
        auto [lo, hi] = view.value_range();
        QVERIFY2(hi <= 1.0e5 && lo >= -1.0e5, qPrintable(QStringLiteral("%1 %2").arg(lo).arg(hi)));
        QVERIFY2(hi >= 0.9e5, qPrintable(QString::number(hi)));
        QVERIFY2(view.summary_text().contains(QStringLiteral("1st–99th percentile")) &&
                     view.summary_text().contains(QStringLiteral("saturate")),
                 qPrintable(view.summary_text()));
        auto* scale = view.findChild<QComboBox*>(QStringLiteral("heatmapScale"));
        QVERIFY(scale);
        scale->setCurrentIndex(1); // full range
        std::tie(lo, hi) = view.value_range();
        QCOMPARE(hi, 2e6);
        QCOMPARE(lo, -2e6);
        QVERIFY(!view.summary_text().contains(QStringLiteral("percentile")));
        // Without a heavy tail auto keeps the full range.
        scale->setCurrentIndex(0);
        ref[5] = 1e5f;
        ref[900] = -1e5f;
        view.show_set(compute_heatmaps(f32(64, 64, ref), f32(64, 64, ref), 0.01, 0.01));
        std::tie(lo, hi) = view.value_range();
        QCOMPARE(hi, 1e5);
    }

    void symlog_functions_and_ticks() {
        QCOMPARE(symlog(0, 10), 0.0);
        QCOMPARE(symlog(90, 10), 1.0);
        QCOMPARE(symlog(-990, 10), -2.0);
        QVERIFY(std::fabs(symlog_inverse(symlog(1234.5, 10), 10) - 1234.5) < 1e-9);
        QVERIFY(std::fabs(symlog_inverse(symlog(-0.25, 0.1), 0.1) + 0.25) < 1e-12);
        // Every decade from c while they fit, 0 between the signs; every third decade when only 5 fit.
        QCOMPARE(symlog_ticks(-2e6, 2e6, 1e4, 9), (std::vector<double>{-1e6, -1e5, -1e4, 0, 1e4, 1e5, 1e6}));
        QCOMPARE(symlog_ticks(0, 1e8, 1, 5), (std::vector<double>{0, 1, 1e3, 1e6}));
        QVERIFY(symlog_ticks(0, 1, 0, 5).empty()); // no threshold: no symlog ticks
    }

    void symlog_spreads_decades_and_labels_values() {
        // 8x8 values: typical ±3e4..1e5 (20 cells at ±3e4, so the 10th percentile of |v| is 3e4 and c
        // = 1e4), two cells at ±2e6 and two zeros; the candidate differs by 0.5 in one cell (c 0.1).
        const float typical[] = {-5e4f, -3e4f, 3e4f, 5e4f, 1e5f, -1e5f};
        std::vector<float> ref(64);
        for (std::size_t i = 0; i < ref.size(); ++i) {
            ref[i] = typical[i % 6];
        }
        ref[10] = 2e6f;
        ref[20] = -2e6f;
        ref[30] = ref[31] = 0;
        std::vector<float> cand = ref;
        cand[7] += 0.5f; // ref[7] = -3e4
        HeatmapView view;
        view.resize(900, 700);
        view.show();
        view.show_set(compute_heatmaps(f32(8, 8, ref), f32(8, 8, cand), 1.0, 0.0));
        auto* scale = view.findChild<QComboBox*>(QStringLiteral("heatmapScale"));
        scale->setCurrentIndex(1); // full range: 1e5 sits at 52.5% of the colour range
        auto position = [&](int map, std::size_t element) {
            const QCPRange r = map_of(view, map)->dataRange();
            const double cell =
                map_of(view, map)->data()->cell(static_cast<int>(element % 8), static_cast<int>(element / 8));
            return (cell - r.lower) / (r.upper - r.lower);
        };
        QVERIFY(std::fabs(position(0, 4) - 0.525) < 1e-9);
        QCOMPARE(view.symlog_threshold_of(0), 0.0);
        scale->setCurrentIndex(3); // symlog
        QCOMPARE(view.symlog_threshold_of(0), 1e4);
        QCOMPARE(view.symlog_threshold_of(2), 0.1);
        const auto [lo, hi] = view.value_range();
        QVERIFY(std::fabs(hi - std::log10(201.0)) < 1e-9 && std::fabs(lo + std::log10(201.0)) < 1e-9);
        // 1e5 at (log10 11 + log10 201) / (2 log10 201) = 72.6%, clear of the centre's colour; 0 at 50%.
        QVERIFY2(std::fabs(position(0, 4) -
                           (std::log10(11.0) + std::log10(201.0)) / (2 * std::log10(201.0))) < 1e-6,
                 qPrintable(QString::number(position(0, 4))));
        QVERIFY(position(0, 4) > 0.72);
        QVERIFY(std::fabs(position(1, 30) - 0.5) < 1e-9);
        // The difference: 0.5 on ±symlog(0.5, 0.1) = ±log10 6, the top of its scale; zeros mid-scale.
        QVERIFY(std::fabs(map_of(view, 2)->dataRange().upper - std::log10(6.0)) < 1e-6);
        QVERIFY(std::fabs(position(2, 7) - 1.0) < 1e-6);
        QVERIFY(std::fabs(position(2, 8) - 0.5) < 1e-9);
        QVERIFY2(view.summary_text().contains(QStringLiteral("symlog: linear within ±1e+04")),
                 qPrintable(view.summary_text()));
        // The colour scale's labels are values, each at its symlog position.
        QCustomPlot* plot = view.plots().at(0);
        plot->replot(QCustomPlot::rpImmediateRefresh);
        const QCPAxis* axis = map_of(view, 0)->colorScale()->axis();
        const QVector<double> ticks = axis->tickVector();
        const QVector<QString> labels = axis->tickVectorLabels();
        QVERIFY2(ticks.size() >= 3, qPrintable(QString::number(ticks.size())));
        QVERIFY(labels.contains(QStringLiteral("0")));
        for (int i = 0; i < ticks.size(); ++i) {
            bool ok = false;
            const double v = labels[i].toDouble(&ok);
            QVERIFY2(ok && std::fabs(symlog(v, 1e4) - ticks[i]) < 1e-6, qPrintable(labels[i]));
        }
        // Back to full range: the cells are the values again, on the colour scale's own ticker.
        scale->setCurrentIndex(1);
        QCOMPARE(view.symlog_threshold_of(0), 0.0);
        QCOMPARE(map_of(view, 0)->data()->cell(4, 0), 1e5);
        QVERIFY(map_of(view, 0)->colorScale()->axis()->ticker().dynamicCast<FittingTicker>());
    }

    void all_zero_difference_reads_plus_minus_one() {
        std::vector<float> ref(16, 1.0f), cand(16, 1.0f);
        cand[3] = std::nanf("");
        HeatmapView view;
        view.show_set(compute_heatmaps(f32(4, 4, ref), f32(4, 4, cand), 0.01, 0.0));
        const QCPRange d = map_of(view, 2)->dataRange();
        QCOMPARE(d.lower, -1.0);
        QCOMPARE(d.upper, 1.0);
        QCOMPARE(map_of(view, 2)->colorScale()->axis()->label(),
                 QStringLiteral("every finite difference is 0"));
        // Symlog has no decades to spread there: the same ±1, said the same way.
        view.findChild<QComboBox*>(QStringLiteral("heatmapScale"))->setCurrentIndex(3);
        QCOMPARE(view.symlog_threshold_of(2), 0.0);
        QCOMPARE(map_of(view, 2)->dataRange().lower, -1.0);
        QCOMPARE(map_of(view, 2)->dataRange().upper, 1.0);
        QCOMPARE(map_of(view, 2)->colorScale()->axis()->label(),
                 QStringLiteral("every finite difference is 0"));
    }
};

QTEST_MAIN(TestHeatmaps)
#include "tst_heatmaps.moc"
