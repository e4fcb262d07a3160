// Issue 16 in the GUI: a mismatch confined to the tie rows a problem named is marked distinctly in the
// rank x trial grid (violet, tooltip, text), the outputs list and the tolerance explorer, and the tie rows
// are bands on the heatmaps. The fixture run is built through core's comparison with real tie rows.
#include "correctnessmodel.h"
#include "fixtures.h"
#include "heatmapview.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/safetensors.h"
#include "qtconvert.h"
#include "runview.h"
#include "tolerancemodel.h"

#include <QListWidget>
#include <QSignalSpy>
#include <QtTest>

using namespace pkbw;
using namespace pkbw::app;
namespace fs = std::filesystem;

namespace {

const TieRowsByOutput kTies = {{"output", {{1, 4}, "top-2 of the bf16 router softmax: 2nd and 3rd equal"}}};
const QString kExplained = QStringLiteral(
    "tie-explained: all 4 mismatched elements are in 2 of the 2 tie rows (top-2 of the bf16 router softmax: "
    "2nd and 3rd equal)");

Tensor scores(bool candidate, bool also_row_0) {
    Tensor t = Tensor::zeros(DType::F32, {6, 4});
    float* v = t.mutable_data_as<float>();
    for (int i = 0; i < 24; ++i) {
        v[i] = static_cast<float>(i % 5);
    }
    if (candidate) { // the tied experts swapped in tokens 1 and 4
        std::swap(v[1 * 4 + 1], v[1 * 4 + 2]);
        std::swap(v[4 * 4 + 0], v[4 * 4 + 3]);
        if (also_row_0) {
            v[2] += 1.0f;
        }
    }
    return t;
}

// Eval, 2 ranks x 1 trial: rank 0's mismatch is confined to the tie rows, rank 1 is also wrong in token 0.
std::int64_t add_tie_run(Store& store, const fs::path& dir) {
    RunRecord run;
    run.problem_stem = "31_moe_test";
    run.mode = RunMode::Eval;
    run.backend = "host";
    run.world_size = 2;
    run.dtype = "f32";
    run.atol = 0.01;
    run.rtol = 0.01;
    run.trials = 1;
    run.run_dir = (dir / "run_ties").string();
    const auto id = store.begin_run(run);
    for (int rank = 0; rank < 2; ++rank) {
        OutputSet ref, cand;
        ref.add("output", scores(false, false));
        cand.add("output", scores(true, rank == 1));
        const fs::path out = dir / "run_ties" / "outputs" / "trial_0";
        fs::create_directories(out);
        write_safetensors((out / ("rank_" + std::to_string(rank) + "_reference.safetensors")).string(), ref);
        write_safetensors((out / ("rank_" + std::to_string(rank) + "_candidate.safetensors")).string(), cand);
        const OutputComparison cmp = compare_outputs(ref, cand, CompareOptions{0.01, 0.01, 256}, kTies);
        for (Side side : {Side::Reference, Side::Candidate}) {
            RankResultRow rr;
            rr.run_id = id;
            rr.rank = rank;
            rr.side = side;
            rr.outcome = side == Side::Candidate ? RankOutcome::Mismatch : RankOutcome::Ok;
            rr.phase = "compare";
            rr.message = side == Side::Candidate ? cmp.first_error : "";
            store.add_rank_result(rr);
        }
        TensorResultRow row = from_comparison(cmp.tensors.at(0));
        row.run_id = id;
        row.rank = rank;
        store.add_tensor_result(row);
    }
    store.finish_run(id, RunStatus::Mismatch, 1, "mismatch");
    return id;
}

} // namespace

class TestTies : public QObject {
    Q_OBJECT
    QString store_;
    std::int64_t run_ = 0;

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test"));
        store_ = test::temp_path(QStringLiteral("ties.db"));
        Store store = Store::open(store_.toStdString());
        run_ = add_tie_run(store, test::temp_path(QStringLiteral("ties_runs")).toStdString());
    }

    void grid_marks_tie_explained_cells() {
        auto data = std::make_shared<const RunData>(load_run(store_.toStdString(), run_));
        CorrectnessModel model;
        model.set_run(data);
        QCOMPARE(model.cell(0, 0).state, CellState::Fail);
        QVERIFY(model.cell(0, 0).tie_explained);
        QCOMPARE(model.index(0, 0).data(CorrectnessModel::TieExplainedRole).toBool(), true);
        QCOMPARE(model.index(0, 0).data(Qt::BackgroundRole).value<QColor>(), tie_explained_color());
        const QString tip = model.index(0, 0).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("fail (tie-explained)")), qPrintable(tip));
        QVERIFY2(tip.contains(kExplained), qPrintable(tip));

        // Rank 1 also mismatches outside the tie rows: an ordinary failure, whose tooltip gives the counts.
        QCOMPARE(model.cell(1, 0).state, CellState::Fail);
        QVERIFY(!model.cell(1, 0).tie_explained);
        QVERIFY(model.index(1, 0).data(Qt::BackgroundRole).value<QColor>() != tie_explained_color());
        const QString other = model.index(1, 0).data(Qt::ToolTipRole).toString();
        QVERIFY2(other.contains(QStringLiteral("<b>fail</b>")), qPrintable(other));
        QVERIFY2(
            other.contains(QStringLiteral("not tie-explained: 1 mismatched row is outside the 2 tie rows, 2 "
                                          "inside")),
            qPrintable(other));
    }

    void tie_bands_follow_the_2d_view() {
        bool truncated = true;
        auto bands = tie_bands({{1, 2, 4}, "r"}, {6, 4}, 10, &truncated);
        QVERIFY(!truncated);
        QCOMPARE(bands.size(), std::size_t(2)); // 1-2 merge, 4 alone
        QCOMPARE(bands[0].row0, 1.0);
        QCOMPARE(bands[0].row1, 3.0);
        QCOMPARE(bands[0].col1, 4.0);
        QCOMPARE(bands[1].row0, 4.0);
        // [3, 2, 2]: dim-0 row 2 is view rows 4 and 5.
        bands = tie_bands({{2}, "r"}, {3, 2, 2}, 10);
        QCOMPARE(bands.size(), std::size_t(1));
        QCOMPARE(bands[0].row0, 4.0);
        QCOMPARE(bands[0].row1, 6.0);
        // 1-D [5]: token 3 is column 3 of the one view row; a 0-dim output is its single cell.
        bands = tie_bands({{3}, "r"}, {5}, 10);
        QCOMPARE(bands[0].col0, 3.0);
        QCOMPARE(bands[0].col1, 4.0);
        QCOMPARE(bands[0].row1, 1.0);
        bands = tie_bands({{0}, "r"}, {}, 10);
        QCOMPARE(bands[0].col1, 1.0);
        QCOMPARE(bands[0].row1, 1.0);
        bands = tie_bands({{0, 2, 4}, "r"}, {6, 4}, 2, &truncated);
        QCOMPARE(bands.size(), std::size_t(2));
        QVERIFY(truncated);
    }

    void run_view_shows_ties_in_details_heatmaps_and_explorer() {
        RunView view;
        view.resize(1200, 800);
        view.set_store(store_);
        QSignalSpy loaded(&view, &RunView::run_loaded);
        QSignalSpy heatmaps(&view, &RunView::heatmaps_ready);
        QSignalSpy rescored(&view, &RunView::rescore_ready);
        view.open_run(run_);
        QVERIFY(loaded.wait(5000));
        heatmaps.clear();
        view.select_cell(0, 0);
        QTRY_VERIFY_WITH_TIMEOUT(heatmaps.count() > 0, 5000);
        const HeatmapSet& set = view.heatmaps()->current();
        QVERIFY(set.has_values);
        QVERIFY(set.ties.has_value());
        QVERIFY(set.ties->explained());
        QCOMPARE(view.heatmaps()->tie_band_count(), 2);
        const QString summary = view.heatmaps()->summary_text();
        QVERIFY2(summary.contains(QStringLiteral("2 tie row(s) (violet bands)")), qPrintable(summary));
        QVERIFY2(summary.contains(kExplained), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("still a failure")), qPrintable(summary));

        auto* list = view.findChild<QListWidget*>(QStringLiteral("tensorList"));
        QVERIFY(list);
        QCOMPARE(list->count(), 1);
        QVERIFY2(list->item(0)->text().contains(QStringLiteral("FAIL (tie-explained)")),
                 qPrintable(list->item(0)->text()));
        QCOMPARE(list->item(0)->foreground().color(), tie_explained_color());
        QCOMPARE(list->item(0)->toolTip(), kExplained);

        // The explorer re-scores the files with the stored tie rows.
        QTRY_VERIFY_WITH_TIMEOUT(rescored.count() > 0, 5000);
        const ToleranceModel* tolerance = view.tolerance_model();
        QCOMPARE(tolerance->rowCount(), 2);
        QCOMPARE(tolerance->index(0, ToleranceModel::Verdict).data().toString(),
                 QStringLiteral("fail (tie-explained)"));
        QCOMPARE(tolerance->index(1, ToleranceModel::Verdict).data().toString(), QStringLiteral("fail"));

        // At a tolerance that forgives the swapped values everything passes; the tie rows stay marked.
        heatmaps.clear();
        view.set_tolerances(10.0, 0.0);
        QTRY_VERIFY_WITH_TIMEOUT(heatmaps.count() > 0, 5000);
        QCOMPARE(view.heatmaps()->current().error.mismatch_count, qint64(0));
        QVERIFY(!view.heatmaps()->current().ties->classified);
        QCOMPARE(view.heatmaps()->tie_band_count(), 2);
        QVERIFY(!view.heatmaps()->summary_text().contains(QStringLiteral("tie-explained")));
        QVERIFY(!view.grab().isNull()); // the bands paint offscreen

        // The other rank: not tie-explained.
        view.set_tolerances(0.01, 0.01);
        heatmaps.clear();
        view.select_cell(1, 0);
        QTRY_VERIFY_WITH_TIMEOUT(heatmaps.count() > 0, 5000);
        QVERIFY(!view.heatmaps()->current().ties->explained());
        QVERIFY(view.heatmaps()->summary_text().contains(QStringLiteral("not tie-explained")));
        QVERIFY(!list->item(0)->text().contains(QStringLiteral("tie-explained")));

        // Opened again with nothing but the store (no outputs files): the stored report still shows.
        fs::remove_all(test::temp_path(QStringLiteral("ties_runs")).toStdString());
        RunView offline;
        offline.set_store(store_);
        QSignalSpy offline_loaded(&offline, &RunView::run_loaded);
        QSignalSpy offline_maps(&offline, &RunView::heatmaps_ready);
        offline.open_run(run_);
        QVERIFY(offline_loaded.wait(5000));
        offline_maps.clear();
        offline.select_cell(0, 0);
        QTRY_VERIFY_WITH_TIMEOUT(offline_maps.count() > 0, 5000);
        QVERIFY(!offline.heatmaps()->current().has_values);
        QVERIFY(offline.heatmaps()->current().ties->explained());
        QCOMPARE(offline.heatmaps()->tie_band_count(), 2);
        QVERIFY(offline.heatmaps()->summary_text().contains(kExplained));
    }
};

QTEST_MAIN(TestTies)
#include "tst_ties.moc"
