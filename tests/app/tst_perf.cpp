// The Perf tab says what a run's timing is when it is not a clean perf run (review point 17): an eval
// run has no timing and no empty plot; an interrupted perf run says it was interrupted and shows what
// it recorded for inspection only; a damaged samples table is named as the reason the plots are
// empty; an imported PKB run says PKB timed it. Its statistics table reads in words, with the units
// of the plots. Every store is written through core, as pkbw records it.
#include "fixtures.h"
#include "perfview.h"

#include <QTableWidget>
#include <QtTest>
#include <qcustomplot.h>
#include <sqlite3.h>

using namespace pkbw;
using namespace pkbw::app;

namespace {

const std::string kGen = "solutions_host_f32_none_review_perf";

// A 2-rank host perf run of 1_allreduce with `blocks` ABBA blocks of samples (reference 2 ms,
// candidate 1 ms, or 20 and 10 µs when `micro`), finished with `status`.
std::int64_t perf_run(Store& store, RunStatus status, int blocks, bool micro = false,
                      const char* backend = "host") {
    RunRecord run = test::perf_run_record("1_allreduce");
    run.backend = backend;
    run.generation = parse_generation_label(kGen);
    const auto id = store.begin_run(run);
    const double scale = micro ? 1e-2 : 1.0;
    for (int rank = 0; rank < 2; ++rank) {
        for (int block = 0; block < blocks; ++block) {
            store.add_perf_samples(id, Side::Reference, rank, block, std::vector<double>(10, 2.0 * scale));
            store.add_perf_samples(id, Side::Candidate, rank, block, std::vector<double>(10, 1.0 * scale));
        }
    }
    store.finish_run(id, status, status == RunStatus::Pass ? 0 : 1, "");
    return id;
}

void add_summaries(Store& store, std::int64_t id,
                   std::initializer_list<std::pair<const char*, double>> rows) {
    for (const auto& [name, value] : rows) {
        store.add_perf_summary({id, Side::Candidate, -1, name, value});
    }
}

// The statistics table's value for a label, "" when no row has it.
QString table_value(const PerfView& view, const QString& label) {
    const QTableWidget* table = view.statistics_table();
    for (int row = 0; row < table->rowCount(); ++row) {
        if (table->item(row, 2)->text() == label) {
            return table->item(row, 3)->text();
        }
    }
    return {};
}

} // namespace

class TestPerf : public QObject {
    Q_OBJECT
    QString path_;

    std::shared_ptr<const RunData> load(std::int64_t id) {
        return std::make_shared<const RunData>(load_run(path_.toStdString(), id));
    }

private slots:
    void initTestCase() {
        path_ = test::temp_path(QStringLiteral("perf-texts.db"));
        QFile::remove(path_);
    }

    void eval_run_has_no_timing_and_no_empty_plot() {
        std::int64_t id = 0;
        {
            Store store = Store::open(path_.toStdString());
            id = test::add_run(store, "1_allreduce", kGen, RunMode::Eval, RunStatus::Pass, std::nullopt, 1);
        }
        PerfView view;
        view.set_data(load(id));
        QVERIFY2(view.headline().startsWith(QStringLiteral("No timing: run %1 is an eval run").arg(id)),
                 qPrintable(view.headline()));
        QVERIFY(view.plot()->isHidden());
        QVERIFY(view.series_plot()->isHidden());
        QVERIFY(view.statistics_table()->isHidden());
    }

    void interrupted_perf_run_says_so() {
        std::int64_t with_samples = 0, without = 0;
        {
            Store store = Store::open(path_.toStdString());
            with_samples = perf_run(store, RunStatus::Interrupted, 2);
            without = perf_run(store, RunStatus::Interrupted, 0);
        }
        PerfView view;
        view.set_data(load(with_samples));
        QVERIFY2(view.headline().contains(
                     QStringLiteral("No speedup: run %1 was interrupted</b> before its timing finished")
                         .arg(with_samples)),
                 qPrintable(view.headline()));
        QString text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral(
                     "Figures recomputed from its samples, for inspection only (not a result): 2.000× (")),
                 qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("recorded before it stopped are plotted")), qPrintable(text));
        QVERIFY(!view.plot()->isHidden());
        QVERIFY2(view.plot_title().contains(QStringLiteral("for inspection only")),
                 qPrintable(view.plot_title()));
        view.set_data(load(without));
        text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("It recorded no samples before it stopped.")),
                 qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("perf mode stores them")), qPrintable(text));
        QVERIFY(view.plot()->isHidden());
    }

    // A run whose headline is the graph figure (microsecond calls, docs/perf.md "A method per kernel size")
    // says so beside its speedup and gives the launched figure with its verdict; one whose headline is the
    // launched figure says so too, with the graph's figure or that there was none (the H200 store: two runs
    // of problem 12, 0.526x launched and 0.806x replayed, read alike); a run stored before either says
    // nothing of the method.
    void graph_headline_is_named_with_the_launched_figure() {
        std::int64_t graph = 0, launched = 0, launched_with_graph = 0, older = 0, host = 0;
        {
            Store store = Store::open(path_.toStdString());
            graph = perf_run(store, RunStatus::Pass, 4, true, "cuda");
            add_summaries(store, graph,
                          {{"speedup", 2.0},
                           {"speedup_ci_low", 1.9},
                           {"speedup_ci_high", 2.1},
                           {"verdict", 1},
                           {"headline_graph", 1},
                           {"launched_speedup", 1.25},
                           {"launched_ci_low", 0.9},
                           {"launched_ci_high", 1.7},
                           {"launched_verdict", 2}});
            launched = perf_run(store, RunStatus::Pass, 4, false, "cuda");
            add_summaries(store, launched,
                          {{"speedup", 2.0},
                           {"speedup_ci_low", 1.9},
                           {"speedup_ci_high", 2.1},
                           {"verdict", 1},
                           {"headline_graph", 0},
                           {"launched_speedup", 2.0}});
            launched_with_graph = perf_run(store, RunStatus::Pass, 4, false, "cuda");
            add_summaries(store, launched_with_graph,
                          {{"speedup", 2.0},
                           {"speedup_ci_low", 1.9},
                           {"speedup_ci_high", 2.1},
                           {"verdict", 1},
                           {"headline_graph", 0},
                           {"launched_speedup", 2.0},
                           {"graph_speedup", 1.5},
                           {"graph_ci_low", 1.4},
                           {"graph_ci_high", 1.6},
                           {"graph_verdict", 1}});
            older = perf_run(store, RunStatus::Pass, 4, false, "cuda");
            host = perf_run(store, RunStatus::Pass, 4);
            add_summaries(
                store, host,
                {{"speedup", 2.0}, {"speedup_ci_low", 1.9}, {"speedup_ci_high", 2.1}, {"headline_graph", 0}});
            add_summaries(store, older,
                          {{"speedup", 2.0}, {"speedup_ci_low", 1.9}, {"speedup_ci_high", 2.1}});
        }
        PerfView view;
        view.set_data(load(graph));
        QString text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("The figure is the graph figure")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Launched, as a caller pays each call: 1.250× (0.900–1.700), "
                                              "ambiguous.")),
                 qPrintable(text));
        view.set_data(load(launched));
        text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("The figure is the launched figure")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("No graph figure was measured")), qPrintable(text));
        {
            // The run's info flag says why.
            Store store = Store::open(path_.toStdString());
            store.set_run_flags(launched, {{launched, 0, "info",
                                            "no graph figure: candidate's calls cannot be captured in a CUDA "
                                            "graph: cudaStreamSynchronize",
                                            "the graph figure replays each side's calls"}});
        }
        view.set_data(load(launched));
        text = view.summary_text();
        QVERIFY2(
            text.contains(QStringLiteral("No graph figure was measured: candidate's calls cannot be captured "
                                         "in a CUDA graph: cudaStreamSynchronize.")),
            qPrintable(text));
        view.set_data(load(launched_with_graph));
        text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("The figure is the launched figure")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("left out): 1.500× (1.400–1.600), faster.")), qPrintable(text));
        view.set_data(load(older));
        text = view.summary_text();
        QVERIFY2(!text.contains(QStringLiteral("graph figure")) &&
                     !text.contains(QStringLiteral("launched figure")),
                 qPrintable(text));
        // The host backend's CPU loops have one method: nothing said of a graph (most CI and laptop runs).
        view.set_data(load(host));
        text = view.summary_text();
        QVERIFY2(!text.contains(QStringLiteral("graph figure")) &&
                     !text.contains(QStringLiteral("launched figure")),
                 qPrintable(text));
    }

    // A run an ambiguous verdict extended (docs/perf.md "One look") says so beside its launches.
    void an_extended_run_says_after_how_many_launches() {
        std::int64_t id = 0;
        {
            Store store = Store::open(path_.toStdString());
            id = perf_run(store, RunStatus::Pass, 4);
            add_summaries(store, id,
                          {{"speedup", 0.993},
                           {"speedup_ci_low", 0.966},
                           {"speedup_ci_high", 1.006},
                           {"verdict", 0},
                           {"launches", 6},
                           {"extended_from", 3}});
        }
        PerfView view;
        view.set_data(load(id));
        const QString text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral(
                     "pooled over 6 launches, 3 of them added when the first 3 read ambiguous)")),
                 qPrintable(text));
    }

    // The review's damaged store: the samples table cannot be read; the figures the run stored can.
    void damaged_samples_are_named_as_the_reason() {
        const QString path = test::temp_path(QStringLiteral("perf-damaged.db"));
        QFile::remove(path);
        std::int64_t id = 0;
        {
            Store store = Store::open(path.toStdString());
            id = perf_run(store, RunStatus::Pass, 2);
            add_summaries(store, id, {{"speedup", 2.0}, {"speedup_ci_low", 1.9}, {"speedup_ci_high", 2.1}});
        }
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open(path.toUtf8().constData(), &db), SQLITE_OK);
        QCOMPARE(sqlite3_exec(db, "DROP TABLE perf_samples", nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
        PerfView view;
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), id)));
        const QString text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("The store could not give this run's perf samples (")) &&
                     text.contains(QStringLiteral("no such table")),
                 qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("No samples in the store")), qPrintable(text));
        QVERIFY2(!text.contains(path), qPrintable(text)); // the store's reason, not its path
        QVERIFY2(view.headline().contains(QStringLiteral("Speedup 2.000×")), qPrintable(view.headline()));
    }

    void imported_pkb_run_says_pkb_timed_it() {
        std::int64_t id = 0;
        {
            Store store = Store::open(path_.toStdString());
            id = test::add_run(store, "2_allgather", kGen, RunMode::Eval, RunStatus::Pass, 1.043, 3,
                               "pkb-cuda", "pkb_speedup");
            add_summaries(
                store, id,
                {{"pkb_speedup.trial_0", 1.44}, {"pkb_speedup.trial_1", 0.66}, {"pkb_speedup.trial_2", 1.1}});
            store.add_perf_summary({id, Side::Reference, -1, "pkb_wall_time_ms_max.trial_1", 0.0125});
        }
        PerfView view;
        view.set_data(load(id));
        QVERIFY2(
            view.headline().contains(QStringLiteral("Imported PKB run:</b> PKB's own protocol timed it")),
            qPrintable(view.headline()));
        const QString text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("PKB's speedup 1.043×")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("perf mode stores them")), qPrintable(text));
        QCOMPARE(view.plot_title(), QStringLiteral("PKB's speedup per trial (imported run)"));
        QCOMPARE(table_value(view, QStringLiteral("PKB's speedup, trial 1")), QStringLiteral("0.660×"));
        // No samples to set the unit: PKB's own times under a millisecond read in µs.
        QCOMPARE(table_value(view, QStringLiteral("PKB: wall time per iteration, slowest rank, trial 1")),
                 QStringLiteral("12.500 µs"));
    }

    // The table's times in the box plot's unit; every stored key in words.
    void statistics_table_reads_in_words_and_the_plot_unit() {
        std::int64_t fast = 0, slow = 0;
        {
            Store store = Store::open(path_.toStdString());
            fast = perf_run(store, RunStatus::Pass, 2, true);
            add_summaries(store, fast,
                          {{"p95_ms", 0.0162},
                           {"algbw_gbps", 312.44},
                           {"verdict", -1},
                           {"verdict_band", 0.05},
                           {"launch_speedup_1", 1.25},
                           {"sm_clock_start_mhz", 1980},
                           // the two figures' keys (the H200 store's Perf table showed them raw)
                           {"headline_graph", 1},
                           {"graph_median_ms", 0.0130609},
                           {"graph_ci_high", 0.870427},
                           {"launched_verdict", 2},
                           {"graph_passes", 17}});
            slow = perf_run(store, RunStatus::Pass, 2);
            add_summaries(store, slow, {{"p95_ms", 2.5}});
        }
        PerfView view;
        view.set_data(load(fast));
        QCOMPARE(view.plot()->yAxis->label(), QStringLiteral("µs per iteration"));
        QCOMPARE(table_value(view, QStringLiteral("95th percentile per iteration")),
                 QStringLiteral("16.200 µs"));
        QCOMPARE(table_value(view, QStringLiteral("algorithm bandwidth")), QStringLiteral("312.4 GB/s"));
        QCOMPARE(table_value(view, QStringLiteral("verdict")), QStringLiteral("slower"));
        QCOMPARE(table_value(view, QStringLiteral("verdict band (a difference beyond ±)")),
                 QStringLiteral("5%"));
        QCOMPARE(table_value(view, QStringLiteral("launch 1: speedup")), QStringLiteral("1.250×"));
        QCOMPARE(table_value(view, QStringLiteral("SM clock at the start")), QStringLiteral("1980 MHz"));
        QCOMPARE(table_value(view, QStringLiteral("graph figure: median per call")),
                 QStringLiteral("13.061 µs"));
        QCOMPARE(table_value(view, QStringLiteral("graph figure: 95% interval to")),
                 QStringLiteral("0.870×"));
        QCOMPARE(table_value(view, QStringLiteral("launched figure: verdict")), QStringLiteral("ambiguous"));
        QCOMPARE(table_value(view, QStringLiteral("graph figure: passes over the input sets a block")),
                 QStringLiteral("17"));
        QVERIFY(
            table_value(view, QStringLiteral("headline figure (docs/perf.md \"A method per kernel size\")"))
                .startsWith(QStringLiteral("graph figure")));
        const QTableWidget* table = view.statistics_table();
        for (int row = 0; row < table->rowCount(); ++row) {
            QVERIFY2(!table->item(row, 2)->text().contains(QLatin1Char('_')),
                     qPrintable(table->item(row, 2)->text()));
        }
        view.set_data(load(slow));
        QCOMPARE(view.plot()->yAxis->label(), QStringLiteral("ms per iteration"));
        QCOMPARE(table_value(view, QStringLiteral("95th percentile per iteration")),
                 QStringLiteral("2.5000 ms"));
    }
};

QTEST_MAIN(TestPerf)
#include "tst_perf.moc"
