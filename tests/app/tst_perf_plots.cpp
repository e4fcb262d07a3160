// The Perf tab's plots and figures from a run's data (issue 19): PKB's per-trial speedups and their
// spread, the axis in microseconds for short calls, the stored pooled figures or ones recomputed where
// none were stored, samples in timing order, whiskers that contrast with the theme. (tst_perf.cpp has
// what the tab says of runs that are not clean perf runs.)
#include "fixtures.h"
#include "perfview.h"
#include "pkbw/core/store.h"
#include "theme.h"

#include <QtTest>
#include <cmath>
#include <qcustomplot.h>

using namespace pkbw;
using namespace pkbw::app;

class TestPerfPlots : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test")); }

    void pkb_per_trial_speedups_show_their_spread() {
        auto data = std::make_shared<RunData>();
        data->run.id = 5;
        data->run.backend = "pkb-cuda";
        data->run.status = RunStatus::Pass; // a finished import (a running run's figures are for inspection)
        for (const auto& [name, value] : {std::pair{"pkb_speedup", 0.976},
                                          {"pkb_speedup.trial_0", 1.44},
                                          {"pkb_speedup.trial_1", 0.665}}) {
            data->summaries.push_back({5, Side::Candidate, -1, name, value});
        }
        PerfView view;
        view.set_data(data);
        const QString text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("PKB's speedup 0.976×")), qPrintable(text));
        QVERIFY2(
            text.contains(QStringLiteral("trial 0: 1.44×, trial 1: 0.665×; spread 0.665–1.44×, 2.17× apart")),
            qPrintable(text));
        QCOMPARE(view.plot()->graphCount(), 1); // the two trials as points
        QCOMPARE(view.plot()->graph(0)->dataCount(), 2);
    }

    // Review defect 28: samples are stored in ms, and a 15 µs iteration must not read "0.015 ms".
    void perf_axis_reads_microseconds_for_short_iterations() {
        const QString path = test::temp_path(QStringLiteral("micro.db"));
        std::int64_t fast = 0, slow = 0;
        {
            Store store = Store::open(path.toStdString());
            fast = test::add_perf_run(store, "1_allreduce", "solutions_cuda_bf16_none_a_b", 0.030, 0.015);
            slow = test::add_perf_run(store, "1_allreduce", "solutions_cuda_bf16_none_a_b", 4.0, 2.0);
        }
        PerfView view;
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), fast)));
        QCOMPARE(view.plot()->yAxis->label(), QStringLiteral("µs per iteration"));
        auto* candidate = qobject_cast<QCPStatisticalBox*>(view.plot()->plottable(1));
        QVERIFY(candidate);
        QVERIFY2(std::fabs(candidate->data()->begin()->median - 15.0) < 1e-9,
                 qPrintable(QString::number(candidate->data()->begin()->median)));
        QVERIFY(view.plot()->yAxis->range().upper > 15.0);
        QVERIFY(view.summary_text().contains(QStringLiteral("Speedup 2.000×"))); // the figures are unit-free
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), slow)));
        QCOMPARE(view.plot()->yAxis->label(), QStringLiteral("ms per iteration"));
        candidate = qobject_cast<QCPStatisticalBox*>(view.plot()->plottable(1));
        QVERIFY(std::fabs(candidate->data()->begin()->median - 2.0) < 1e-9);
    }

    // The Perf tab shows the pooled figures the run stored (speedup, interval, verdict, launches, each
    // launch's speedup), not a recomputation over its blocks (whose indices are launch * 1000 + block).
    void perf_view_shows_the_stored_pooled_figures() {
        const QString path = test::temp_path(QStringLiteral("pooled.db"));
        std::int64_t id = 0;
        {
            Store store = Store::open(path.toStdString());
            id = store.begin_run(test::perf_run_record("1_allreduce"));
            for (int rank = 0; rank < 2; ++rank) {
                for (int launch = 0; launch < 2; ++launch) {
                    for (int block = 0; block < 4; ++block) {
                        store.add_perf_samples(id, Side::Reference, rank, launch * 1000 + block,
                                               std::vector<double>(10, 2.0));
                        store.add_perf_samples(id, Side::Candidate, rank, launch * 1000 + block,
                                               std::vector<double>(10, 1.0));
                    }
                }
            }
            for (const auto& [name, value] : {std::pair{"speedup", 1.31},
                                              {"speedup_ci_low", 0.98},
                                              {"speedup_ci_high", 1.7},
                                              {"verdict", 2.0},
                                              {"verdict_band", 0.05},
                                              {"launches", 2.0},
                                              {"launch_speedup_0", 1.2},
                                              {"launch_ci_low_0", 1.1},
                                              {"launch_ci_high_0", 1.3},
                                              {"launch_speedup_1", 1.4},
                                              {"launch_ci_low_1", 1.35},
                                              {"launch_ci_high_1", 1.45}}) {
                store.add_perf_summary({id, Side::Candidate, -1, name, value});
            }
            store.finish_run(id, RunStatus::Pass, 0, "");
        }
        const auto data = std::make_shared<const RunData>(load_run(path.toStdString(), id));
        const PerfFigures f = compute_perf(*data);
        QVERIFY(f.stored);
        QCOMPARE(f.speedup, 1.31);
        QCOMPARE(f.ci_low, 0.98);
        QCOMPARE(f.verdict, QStringLiteral("ambiguous"));
        QCOMPARE(f.launches, 2);
        QCOMPARE(static_cast<int>(f.per_launch.size()), 2);
        PerfView view;
        view.set_data(data);
        const QString text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("Speedup 1.310×</b> (95% interval 0.980–1.700, pooled over 2 "
                                              "launches): <b>ambiguous</b>")),
                 qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Per launch: 1.200× (1.100–1.300), 1.400× (1.350–1.450).")),
                 qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("Recomputed")), qPrintable(text));
        QCOMPARE(view.series_plot()->graphCount(), 4); // both launches' samples, in timing order

        // One launch: its interval is the pooled one (the lower end less the judge's margin), so it is not
        // listed again with another lower end (the H200's PKB run: pooled 1.155, "per launch" 1.159).
        std::int64_t one = 0;
        {
            Store store = Store::open(path.toStdString());
            one = store.begin_run(test::perf_run_record("1_allreduce"));
            for (const auto& [name, value] : {std::pair{"speedup", 1.247},
                                              {"speedup_ci_low", 1.155},
                                              {"speedup_ci_high", 1.585},
                                              {"verdict", 1.0},
                                              {"launches", 1.0},
                                              {"launch_speedup_0", 1.247},
                                              {"launch_ci_low_0", 1.159},
                                              {"launch_ci_high_0", 1.585}}) {
                store.add_perf_summary({one, Side::Candidate, -1, name, value});
            }
            store.finish_run(one, RunStatus::Pass, 0, "");
        }
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), one)));
        QVERIFY2(!view.summary_text().contains(QStringLiteral("Per launch")),
                 qPrintable(view.summary_text()));
        QVERIFY2(view.summary_text().contains(QStringLiteral("(95% interval 1.155–1.585)")),
                 qPrintable(view.summary_text()));
    }

    // A run stored before the pooled figures: recomputed from its samples, each launch apart.
    void perf_view_recomputes_runs_without_stored_figures() {
        const QString path = test::temp_path(QStringLiteral("legacy_launches.db"));
        std::int64_t id = 0;
        {
            Store store = Store::open(path.toStdString());
            id = store.begin_run(test::perf_run_record("1_allreduce"));
            for (int rank = 0; rank < 2; ++rank) {
                for (int launch = 0; launch < 2; ++launch) {
                    for (int block = 0; block < 4; ++block) {
                        store.add_perf_samples(id, Side::Reference, rank, launch * 1000 + block,
                                               std::vector<double>(10, launch == 0 ? 2.0 : 3.0));
                        store.add_perf_samples(id, Side::Candidate, rank, launch * 1000 + block,
                                               std::vector<double>(10, 1.0));
                    }
                }
            }
            store.finish_run(id, RunStatus::Pass, 0, "");
        }
        const auto data = std::make_shared<const RunData>(load_run(path.toStdString(), id));
        const PerfFigures f = compute_perf(*data);
        QVERIFY(!f.stored);
        QVERIFY(f.has_figures);
        QCOMPARE(f.launches, 2);
        QCOMPARE(static_cast<int>(f.per_launch.size()), 2);
        QCOMPARE(f.per_launch[0].speedup, 2.0);
        QCOMPARE(f.per_launch[1].speedup, 3.0);
        QVERIFY(std::fabs(f.speedup - std::sqrt(6.0)) < 1e-9); // the geometric mean over launches
        PerfView view;
        view.set_data(data);
        QVERIFY2(view.summary_text().contains(QStringLiteral("Recomputed from the samples")),
                 qPrintable(view.summary_text()));
    }

    // Review defect 28's last part: every sample in timing order. Blocks by their ABBA index (here
    // reference 0, candidate 1, candidate 2, reference 3), iterations in order; a slow first
    // iteration and the side of each block are where they were timed.
    void perf_series_follows_the_timing_order() {
        const QString path = test::temp_path(QStringLiteral("series.db"));
        std::int64_t id = 0;
        {
            Store store = Store::open(path.toStdString());
            id = store.begin_run(test::perf_run_record("1_allreduce"));
            for (int rank = 0; rank < 2; ++rank) {
                store.add_perf_samples(id, Side::Candidate, rank, 2, std::vector<double>{2.0, 2.0});
                store.add_perf_samples(id, Side::Reference, rank, 0, std::vector<double>{9.0, 4.0, 4.0});
                store.add_perf_samples(id, Side::Candidate, rank, 1, std::vector<double>{2.0, 2.5});
                store.add_perf_samples(id, Side::Reference, rank, 3, std::vector<double>{4.0, 4.0});
                store.add_perf_samples(id, Side::Reference, rank, -1,
                                       std::vector<double>{100.0}); // PKB's series: not here
            }
            store.finish_run(id, RunStatus::Pass, 0, "");
        }
        PerfView view;
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), id)));
        QCustomPlot* series = view.series_plot();
        QVERIFY(series->isVisibleTo(&view));
        QCOMPARE(series->graphCount(), 4); // (reference, candidate) x 2 ranks
        auto points = [](QCPGraph* g) {
            QStringList out;
            for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
                out << QStringLiteral("%1:%2").arg(it->key).arg(it->value);
            return out.join(QLatin1Char(' '));
        };
        QCOMPARE(series->graph(0)->name(), QStringLiteral("reference"));
        QCOMPARE(points(series->graph(0)), QStringLiteral("0:9 1:4 2:4 7:4 8:4"));
        QCOMPARE(points(series->graph(1)), QStringLiteral("3:2 4:2.5 5:2 6:2"));
        QCOMPARE(series->legend->itemCount(), 2); // one entry per side, not per rank
        QCOMPARE(series->yAxis->label(), QStringLiteral("ms per iteration"));
        // A run with no pkbw samples hides the series.
        std::int64_t bare = 0;
        {
            Store store = Store::open(path.toStdString());
            RunRecord run;
            run.problem_stem = "1_allreduce";
            run.mode = RunMode::Eval;
            bare = store.begin_run(run);
            store.finish_run(bare, RunStatus::Pass, 0, "");
        }
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), bare)));
        QVERIFY(!series->isVisibleTo(&view));
        QCOMPARE(series->graphCount(), 0);
    }

    // Review defect 29: on the dark theme the whiskers and medians are drawn light, contrasting
    // with the plot's dark background (black ones vanished); on the light theme, dark.
    void perf_whiskers_contrast_with_the_theme() {
        const QString path = test::temp_path(QStringLiteral("whiskers.db"));
        std::int64_t id = 0;
        {
            Store store = Store::open(path.toStdString());
            id = test::add_perf_run(store, "1_allreduce", "solutions_cuda_bf16_none_a_b", 4.0, 2.0);
        }
        const auto data = std::make_shared<const RunData>(load_run(path.toStdString(), id));
        for (const Theme theme : {Theme::Dark, Theme::Light}) {
            apply_theme(theme);
            PerfView view;
            view.set_data(data);
            auto* box = qobject_cast<QCPStatisticalBox*>(view.plot()->plottable(0));
            QVERIFY(box);
            // The drawn plot's own background, at a corner no data reaches.
            const int background = view.plot()->toPixmap(400, 300).toImage().pixelColor(2, 2).lightness();
            for (const QPen& pen : {box->whiskerPen(), box->whiskerBarPen(), box->medianPen()}) {
                QVERIFY2(std::abs(pen.color().lightness() - background) > 100,
                         qPrintable(QStringLiteral("theme %1: pen lightness %2, background %3")
                                        .arg(theme == Theme::Dark ? "dark" : "light")
                                        .arg(pen.color().lightness())
                                        .arg(background)));
            }
        }
        apply_theme(Theme::Light);
    }
};

QTEST_MAIN(TestPerfPlots)
#include "tst_perf_plots.moc"
