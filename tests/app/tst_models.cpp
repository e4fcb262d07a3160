// Every model under QAbstractItemModelTester, on fixture stores built through core.
#include "correctnessmodel.h"
#include "fixtures.h"
#include "generationsview.h"
#include "pkbw/core/sweep_table.h"
#include "runsmodel.h"
#include "tolerancemodel.h"

#include <QAbstractItemModelTester>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>

using namespace pkbw;
using namespace pkbw::app;

class TestModels : public QObject {
    Q_OBJECT
    static QString path600() {
        const QString path = test::temp_path(QStringLiteral("runs600.db"));
        if (!QFile::exists(path)) {
            Store store = Store::open(path.toStdString());
            test::add_many_runs(store, 600);
        }
        return path;
    }

private slots:
    void runs_model_pages() {
        // No model tester here: it calls fetchMore itself after every insertion.
        RunsModel model;
        QSignalSpy loaded(&model, &RunsModel::page_loaded);
        model.set_store(path600());
        QVERIFY(loaded.wait(5000));
        QCOMPARE(model.total(), qint64(600));
        QCOMPARE(model.rowCount(), RunsModel::kPageSize);
        QVERIFY(model.canFetchMore({}));
        model.fetchMore({});
        QVERIFY(loaded.wait(5000));
        QCOMPARE(model.rowCount(), 2 * RunsModel::kPageSize);
        model.fetchMore({});
        QVERIFY(loaded.wait(5000));
        QCOMPARE(model.rowCount(), 600);
        QVERIFY(!model.canFetchMore({}));
    }
    void runs_model_sorts_and_filters() {
        RunsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy loaded(&model, &RunsModel::page_loaded);
        model.set_store(path600());
        QVERIFY(loaded.wait(5000));
        while (model.rowCount() < 600) {
            QVERIFY(model.canFetchMore({}));
            model.fetchMore({});
            QVERIFY(loaded.wait(5000));
        }
        QCOMPARE(model.rowCount(), 600);
        model.sort(RunsModel::Id, Qt::AscendingOrder);
        QVERIFY(loaded.wait(5000));
        QCOMPARE(model.index(0, RunsModel::Id).data().toLongLong(), 1);
        QCOMPARE(model.index(1, RunsModel::Id).data().toLongLong(), 2);

        RunFilter f;
        f.status = RunStatus::Mismatch;
        model.set_filter(f);
        QVERIFY(loaded.wait(5000));
        QCOMPARE(model.total(), qint64(200)); // every third of 600
        QCOMPARE(model.index(0, RunsModel::Status).data().toString(), QStringLiteral("mismatch"));
        f = {};
        f.problem_stem = "p3";
        f.backend = "host";
        model.set_filter(f);
        QVERIFY(loaded.wait(5000));
        QCOMPARE(model.total(), qint64(60)); // i % 5 == 3 and i odd: i % 10 == 3
        QCOMPARE(model.index(0, RunsModel::Problem).data().toString(), QStringLiteral("p3"));
    }
    void runs_model_opens_10k_store_under_a_second() {
        const QString path = test::temp_path(QStringLiteral("runs10k.db"));
        {
            Store store = Store::open(path.toStdString());
            test::add_many_runs(store, 10000);
        }
        QElapsedTimer timer;
        timer.start();
        RunsModel model;
        QSignalSpy loaded(&model, &RunsModel::page_loaded);
        model.set_store(path);
        QVERIFY(loaded.wait(5000));
        const qint64 ms = timer.elapsed();
        qInfo("10k-run store: first page in %lld ms", ms);
        QCOMPARE(model.total(), qint64(10000));
        QVERIFY2(ms < 1000, qPrintable(QStringLiteral("took %1 ms").arg(ms)));
    }
    void runs_model_reports_a_bad_store() {
        const QString path = test::temp_path(QStringLiteral("garbage.db"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(4096, 'x'));
        f.close();
        RunsModel model;
        QSignalSpy failed(&model, &RunsModel::load_failed);
        model.set_store(path);
        QVERIFY(failed.wait(5000));
        QCOMPARE(model.rowCount(), 0);
    }
    void correctness_model_states() {
        const QString path = test::temp_path(QStringLiteral("grid.db"));
        test::FixtureRun run;
        {
            Store store = Store::open(path.toStdString());
            run = test::add_eval_run(store, test::temp_path(QStringLiteral("grid_runs")).toStdString());
        }
        auto data = std::make_shared<const RunData>(load_run(path.toStdString(), run.run_id));
        CorrectnessModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.set_run(data);
        QCOMPARE(model.rowCount(), 2);    // ranks
        QCOMPARE(model.columnCount(), 3); // trials
        QCOMPARE(model.cell(0, 0).state, CellState::Pass);
        QCOMPARE(model.cell(1, 0).state, CellState::Pass);
        QCOMPARE(model.cell(0, 1).state, CellState::Pass);
        QCOMPARE(model.cell(1, 1).state, CellState::Fail);
        QCOMPARE(model.cell(1, 1).mismatch_count, qint64(3));
        QCOMPARE(model.cell(0, 2).state, CellState::NotRun);
        QCOMPARE(model.index(1, 1).data().toString(), QStringLiteral("inf"));
        QCOMPARE(model.index(0, 2).data().toString(), QStringLiteral("–"));
        QVERIFY(model.index(1, 1)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("mismatches 3 of 16")));
        QCOMPARE(model.headerData(1, Qt::Vertical, Qt::DisplayRole).toString(), QStringLiteral("rank 1"));
    }
    void tolerance_model_rescoring() {
        const QString path = test::temp_path(QStringLiteral("tol.db"));
        test::FixtureRun run;
        {
            Store store = Store::open(path.toStdString());
            run = test::add_eval_run(store, test::temp_path(QStringLiteral("tol_runs")).toStdString());
        }
        const RunData data = load_run(path.toStdString(), run.run_id);
        ToleranceModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.set_rows(rescore_outputs(data, 0.01, 0));
        QCOMPARE(model.rowCount(), 4); // 2 trials x 2 ranks with outputs
        QCOMPARE(model.pass_count(), 3);
        // atol 1 forgives the 0.5 and 0.04 errors but never the NaN.
        model.set_rows(rescore_outputs(data, 1.0, 0));
        QCOMPARE(model.pass_count(), 3);
        const auto& bad = model.rows()[3];
        QCOMPARE(bad.trial, 1);
        QCOMPARE(bad.rank, 1);
        QCOMPARE(bad.mismatch_count, qint64(1));
    }
    void generation_matrix() {
        const QString path = test::temp_path(QStringLiteral("gens.db"));
        {
            Store store = Store::open(path.toStdString());
            const std::string g1 = "solutions_cuda_bf16_none_anthropic_a",
                              g2 = "solutions_cuda_bf16_none_openai_b";
            test::add_perf_run(store, "1_allreduce", g1, 2.0, 1.0);
            test::add_perf_run(store, "2_allgather", g1, 1.0, 2.0);
            test::add_perf_run(store, "1_allreduce", g2, 3.0, 1.0);
        }
        const GenerationMatrix m = load_generation_matrix(Store::open_read_only(path.toStdString()));
        GenerationMatrixModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.set_matrix(m);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.columnCount(), 2);
        QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("pass 2.00× (no interval)"));
        QCOMPARE(model.index(1, 1).data().toString(), QStringLiteral("–"));
        const auto r1 = m.results_of(0);
        QVERIFY(std::fabs(*geomean_speedup(r1) - 1.0) < 1e-9); // sqrt(2 * 0.5)
        QCOMPARE(fast_p(m.results_of(1), 1.0), 0.5);           // 3x on one of two problems
        QVERIFY(model.run_id(model.index(0, 0)) > 0);
    }
    // Runs that stored the pooled interval and verdict: fast_1 counts a pair only when its interval
    // clears 1 (core's rule), the matrix and the runs list print the verdict beside the speedup, and
    // the Generations table's fast_1 equals the Sweeps table's for the same runs.
    void generation_matrix_counts_fast_1_by_the_interval() {
        const QString path = test::temp_path(QStringLiteral("gens_interval.db"));
        const std::string g = "solutions_cuda_bf16_none_anthropic_a";
        std::int64_t sweep_id = 0;
        {
            Store store = Store::open(path.toStdString());
            // Both 1.3x; one's interval reaches down to 0.98 (ambiguous), the other's starts at 1.02.
            const auto ambiguous = test::add_perf_run(store, "1_allreduce", g, 1.3, 1.0);
            const auto faster = test::add_perf_run(store, "2_allgather", g, 1.3, 1.0);
            for (const auto& [id, low, high, code] :
                 {std::tuple{ambiguous, 0.98, 1.7, 2.0}, std::tuple{faster, 1.02, 1.6, 1.0}}) {
                store.add_perf_summary({id, Side::Candidate, -1, "speedup_ci_low", low});
                store.add_perf_summary({id, Side::Candidate, -1, "speedup_ci_high", high});
                store.add_perf_summary({id, Side::Candidate, -1, "verdict", code});
            }
            std::vector<SweepPair> pairs;
            for (const auto& [id, stem] : {std::pair{ambiguous, "1_allreduce"}, {faster, "2_allgather"}}) {
                SweepPair p;
                p.generation_label = g;
                p.problem_stem = stem;
                p.solution_path = "/s/" + p.problem_stem + ".cu";
                p.position = static_cast<int>(pairs.size());
                p.state = "done";
                p.run_id = id;
                pairs.push_back(p);
            }
            SweepRecord s;
            s.mode = "perf";
            s.backend = "cuda";
            s.world_size = 2;
            sweep_id = create_sweep(store, s, pairs);
            for (const auto& p : pairs) {
                record_sweep_pair(store, sweep_id, p);
            }
        }
        const Store store = Store::open_read_only(path.toStdString());
        const GenerationMatrix m = load_generation_matrix(store);
        QCOMPARE(m.problems, (std::vector<std::string>{"1_allreduce", "2_allgather"}));
        const GenerationStats st = m.stats_of(0);
        QCOMPARE(st.correct, 2);
        QCOMPARE(st.fast_1, 1); // not the 1.3x whose interval reaches 0.98
        QCOMPARE(fast_p(m.results_of(0), 1.0), 0.5);
        QCOMPARE(*m.cells.at({0, 0}).ci_low, 0.98);
        QCOMPARE(*m.cells.at({0, 0}).verdict, Verdict::Ambiguous);
        const SweepTable sweep = sweep_table(store, sweep_id);
        QCOMPARE(sweep.generations.at(0).fast_p(1) * sweep.generations.at(0).attempted, double(st.fast_1));
        QCOMPARE(sweep.generations.at(0).fast_p(0), fast_p(m.results_of(0), 0.0));

        GenerationMatrixModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.set_matrix(m);
        QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("pass 1.30× ambiguous [0.98–1.70]"));
        QCOMPARE(model.index(0, 1).data().toString(), QStringLiteral("pass 1.30× faster [1.02–1.60]"));
        QVERIFY(model.index(0, 0)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("does not count toward fast_1")));

        RunsModel runs;
        QSignalSpy loaded(&runs, &RunsModel::page_loaded);
        runs.set_store(path);
        QVERIFY(loaded.wait(5000));
        QStringList speedups;
        for (int r = 0; r < runs.rowCount(); ++r) {
            speedups << runs.index(r, RunsModel::Speedup).data().toString();
        }
        speedups.sort();
        QCOMPARE(speedups, (QStringList{QStringLiteral("1.300× ambiguous [0.980–1.700]"),
                                        QStringLiteral("1.300× faster [1.020–1.600]")}));
    }
};

QTEST_MAIN(TestModels)
#include "tst_models.moc"
