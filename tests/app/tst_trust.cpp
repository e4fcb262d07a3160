// The workbench shows only numbers it trusts, and the same numbers everywhere: a run whose timing is
// not trusted (invalid_timing, a mismatch, anything but a clean pass) shows no speedup as a result on
// Perf, in the Runs list, the matrix or an export; the paper figures of the Sweeps and Generations
// tabs and `pkbw show --sweep` are core's PaperFigures; every speedup carries its verdict and
// interval; a pkbw/PKB disagreement in direction is shown and not counted toward fast_1; flags are
// grouped by severity. Stores are written through core, as pkbw records them.
#include "exporting.h"
#include "fixtures.h"
#include "generationsview.h"
#include "mainwindow.h"
#include "perfview.h"
#include "pkbw/core/sweep_table.h"
#include "rundata.h"
#include "runsmodel.h"
#include "runwarnings.h"
#include "sweepsview.h"

#include <QProcess>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>
#include <qcustomplot.h>

using namespace pkbw;
using namespace pkbw::app;

namespace {

const std::string kGen = "solutions_host_f32_none_review_wrong";

struct Figures {
    double speedup, ci_low, ci_high, verdict_code;
    std::optional<double> pkb_speedup;
};

// A finished 2-rank host perf run with its pooled figures stored (side candidate, rank -1) and
// samples (reference 2 ms, candidate `candidate_ms`), as pkbw perf writes them.
std::int64_t perf_run(Store& store, const std::string& problem, RunStatus status, std::optional<Figures> f,
                      const std::string& summary, int second) {
    RunRecord run = test::perf_run_record(problem);
    run.generation = parse_generation_label(kGen);
    run.started_at =
        QStringLiteral("2026-12-02T10:00:%1Z").arg(second, 2, 10, QLatin1Char('0')).toStdString();
    const auto id = store.begin_run(run);
    for (int rank = 0; rank < 2; ++rank) {
        for (int block = 0; block < 4; ++block) {
            store.add_perf_samples(id, Side::Reference, rank, block, std::vector<double>(20, 2.0));
            store.add_perf_samples(id, Side::Candidate, rank, block, std::vector<double>(20, 0.6));
        }
    }
    if (f) {
        const std::pair<const char*, std::optional<double>> rows[] = {{"speedup", f->speedup},
                                                                      {"speedup_ci_low", f->ci_low},
                                                                      {"speedup_ci_high", f->ci_high},
                                                                      {"verdict", f->verdict_code},
                                                                      {"pkb_speedup", f->pkb_speedup}};
        for (const auto& [name, value] : rows) {
            if (value) {
                store.add_perf_summary({id, Side::Candidate, -1, name, *value});
            }
        }
    }
    store.finish_run(id, status, status == RunStatus::Pass ? 0 : 1, summary);
    return id;
}

const char* const kDistrust = "timing not trusted: candidate: re-check after timing: output mismatch";

// A store like the review's host store: sweep 1 over four problems of one generation.
//   1_allreduce  invalid_timing, stored figures 3.385x faster (its re-check found wrong outputs)
//   2_allgather  pass 1.131x ambiguous (0.850-1.415), PKB 0.692x: disagreement in direction
//   3_broadcast  pass 1.400x faster (1.200-1.600), PKB 0.700x: faster by pkbw, disputed by PKB
//   4_reduce     pass 4.378x faster (4.100-4.600)
struct TrustStore {
    QString path;
    std::int64_t untrusted = 0, ambiguous = 0, disputed = 0, faster = 0, sweep = 0;
};

TrustStore make_store() {
    TrustStore t;
    t.path = test::temp_path(QStringLiteral("trust.db"));
    QFile::remove(t.path);
    Store store = Store::open(t.path.toStdString());
    t.untrusted = perf_run(store, "1_allreduce", RunStatus::InvalidTiming,
                           Figures{3.385, 3.338, 3.552, 1, {}}, kDistrust, 1);
    t.ambiguous = perf_run(
        store, "2_allgather", RunStatus::Pass, Figures{1.131, 0.850, 1.415, 2, 0.692},
        "5 trial(s) match; warning: loads code at run time (dlopen); warning: starts host threads "
        "(pthread_create); warning: reads /proc/self/maps; warning: calls NCCL collective ncclAllGather",
        2);
    t.disputed = perf_run(store, "3_broadcast", RunStatus::Pass, Figures{1.4, 1.2, 1.6, 1, 0.7}, "", 3);
    t.faster = perf_run(store, "4_reduce", RunStatus::Pass, Figures{4.378, 4.1, 4.6, 1, {}}, "", 4);
    std::vector<SweepPair> pairs;
    for (auto id : {t.untrusted, t.ambiguous, t.disputed, t.faster}) {
        SweepPair p;
        p.generation_label = kGen;
        p.problem_stem = store.get_run(id)->problem_stem;
        p.solution_path = "/s/" + p.problem_stem + ".cpp";
        p.position = static_cast<int>(pairs.size());
        p.state = "done";
        p.run_id = id;
        pairs.push_back(p);
    }
    SweepRecord s;
    s.mode = "perf";
    s.backend = "host";
    s.world_size = 2;
    t.sweep = create_sweep(store, s, pairs);
    for (const auto& p : pairs) {
        record_sweep_pair(store, t.sweep, p);
    }
    return t;
}

// The value a left-continuous step curve (QCPGraph::lsStepLeft) draws at p: that of the last point at
// or before p.
double curve_at(const QCPGraph* graph, double p) {
    double value = 0;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) {
        if (it->key <= p) {
            value = it->value;
        }
    }
    return value;
}

} // namespace

class TestTrust : public QObject {
    Q_OBJECT
    TrustStore t_;

    std::shared_ptr<RunData> load(std::int64_t id) {
        return std::make_shared<RunData>(load_run(t_.path.toStdString(), id));
    }

private slots:
    void initTestCase() { t_ = make_store(); }

    // Blocker: Perf never presents an untrusted run's figures as its speedup.
    void perf_headline_withholds_an_untrusted_speedup() {
        PerfView view;
        view.set_data(load(t_.untrusted));
        const QString headline = view.headline();
        QVERIFY2(headline.contains(QStringLiteral("No speedup: timing not trusted (invalid_timing)")),
                 qPrintable(headline));
        QVERIFY2(headline.contains(QStringLiteral("re-check after timing")), qPrintable(headline));
        QVERIFY2(!headline.contains(QStringLiteral("3.385")), qPrintable(headline));
        const QString text = view.summary_text();
        QVERIFY2(!text.contains(QStringLiteral("Speedup 3.385")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("for inspection only (not a result): 3.385× (95% interval "
                                              "3.338–3.552; no verdict)")),
                 qPrintable(text));
        // No verdict and nothing in bold beside the withheld figures: "faster" there reads as a result.
        QVERIFY2(!text.contains(QStringLiteral("faster")) && !text.contains(QStringLiteral("<b>3.385")),
                 qPrintable(text));
        QVERIFY2(view.plot_title().contains(QStringLiteral("for inspection only")),
                 qPrintable(view.plot_title()));
        // A clean pass keeps its speedup as the headline, with interval and verdict.
        view.set_data(load(t_.faster));
        QVERIFY2(view.headline().contains(
                     QStringLiteral("Speedup 4.378×</b> (95% interval 4.100–4.600): <b>faster")),
                 qPrintable(view.headline()));
        QVERIFY(!view.plot_title().contains(QStringLiteral("inspection")));
    }

    void perf_headline_says_when_pkbw_and_pkb_disagree() {
        PerfView view;
        view.set_data(load(t_.ambiguous));
        QVERIFY2(view.summary_text().contains(QStringLiteral("pkbw and PKB disagree in direction")),
                 qPrintable(view.summary_text()));
        view.set_data(load(t_.faster));
        QVERIFY(!view.summary_text().contains(QStringLiteral("disagree")));
    }

    // The Runs list (and so its CSV export) withholds it too; results carry verdict and interval.
    void runs_list_and_export_withhold_an_untrusted_speedup() {
        RunsModel model;
        QSignalSpy loaded(&model, &RunsModel::page_loaded);
        model.set_store(t_.path);
        QVERIFY(loaded.wait(5000));
        QMap<qint64, QString> speedup;
        for (int r = 0; r < model.rowCount(); ++r) {
            speedup[model.run_id(r)] = model.index(r, RunsModel::Speedup).data().toString();
        }
        QCOMPARE(speedup[t_.untrusted], QStringLiteral("untrusted"));
        QVERIFY(model.index(0, 0).isValid());
        int untrusted_row = -1;
        for (int r = 0; r < model.rowCount(); ++r) {
            untrusted_row = model.run_id(r) == t_.untrusted ? r : untrusted_row;
        }
        const QString tip = model.index(untrusted_row, RunsModel::Speedup).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("timing not trusted")) &&
                     tip.contains(QStringLiteral("for inspection")),
                 qPrintable(tip));
        QCOMPARE(speedup[t_.faster], QStringLiteral("4.378× faster [4.100–4.600]"));
        QCOMPARE(speedup[t_.ambiguous], QStringLiteral("1.131× ambiguous [0.850–1.415] ≠ PKB 0.692×"));
        const QString csv = csv_text(&model);
        QVERIFY2(!csv.contains(QStringLiteral("3.385")), qPrintable(csv));
        QVERIFY(csv.contains(QStringLiteral("untrusted")));
    }

    // One set of figures: Sweeps (core's sweep_table), Generations and `pkbw show --sweep` agree,
    // the untrusted pair is not correct anywhere, the disputed pair not in fast_1.
    void sweeps_and_generations_count_alike() {
        const Store store = Store::open_read_only(t_.path.toStdString());
        const SweepTable sweep = sweep_table(store, t_.sweep);
        const SweepGenerationRow& row = sweep.generations.at(0);
        QCOMPARE(row.attempted, 4);
        QCOMPARE(row.correct, 3);  // not the invalid_timing pair
        QCOMPARE(row.faster, 1);   // 4_reduce; 3_broadcast is disputed by PKB
        QCOMPARE(row.disputed, 2); // 2_allgather, 3_broadcast
        QCOMPARE(row.fast_p(1), 0.25);
        QCOMPARE(row.failures.at("invalid_timing"), 1);
        const GenerationMatrix m = load_generation_matrix(store);
        const GenerationStats st = m.stats_of(0);
        QCOMPARE(st.correct, row.correct);
        QCOMPARE(st.fast_1, 1);
        for (double p : {0.0, 0.5, 0.9, 1.0, 1.5, 2.0, 4.2}) {
            QCOMPARE(st.figures.fast_p(p), row.fast_p(p));
        }
        QCOMPARE(*st.figures.geomean(), *row.geomean());
        QCOMPARE(st.geomean_n, 3);
        GenerationMatrixModel model;
        model.set_matrix(m);
        QCOMPARE(model.index(0, 0).data().toString(), QStringLiteral("invalid_timing"));
        QVERIFY2(
            model.index(0, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("timing not trusted")),
            qPrintable(model.index(0, 0).data(Qt::ToolTipRole).toString()));
        QCOMPARE(model.index(0, 2).data().toString(),
                 QStringLiteral("pass 1.40× faster [1.20–1.60] ≠ PKB 0.70×"));
        QVERIFY(model.index(0, 2)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("disagree in direction")));
    }

    // Review point 4: one generation has one colour on the Sweeps and Generations tabs, also when the
    // store holds a generation the sweep does not (it sorts first here: ranked among the sweep's own
    // labels, the sweep's generation took the first colour on Sweeps and the second on Generations).
    void one_generation_has_one_colour_on_both_tabs() {
        const QString path = test::temp_path(QStringLiteral("trust-colours.db"));
        QFile::remove(path);
        QVERIFY(QFile::copy(t_.path, path));
        {
            Store store = Store::open(path.toStdString());
            RunRecord other = test::perf_run_record("1_allreduce");
            other.generation = parse_generation_label("solutions_cuda_bf16_h200_8_anthropic_claude");
            QVERIFY(other.generation.label < kGen);
            store.finish_run(store.begin_run(other), RunStatus::Pass, 0, "");
        }
        SweepsView sweeps;
        QSignalSpy sweeps_loaded(&sweeps, &SweepsView::loaded);
        sweeps.set_store(path);
        QVERIFY(sweeps_loaded.wait(10000));
        sweeps.show_sweep(t_.sweep);
        QVERIFY(sweeps_loaded.wait(10000));
        GenerationsView generations;
        QSignalSpy generations_loaded(&generations, &GenerationsView::loaded);
        generations.set_store(path);
        QVERIFY(generations_loaded.wait(10000));
        QColor on_sweeps, on_generations;
        for (int i = 0; i < sweeps.fast_p_plot()->graphCount(); ++i)
            if (sweeps.fast_p_plot()->graph(i)->name() == QString::fromStdString(kGen))
                on_sweeps = sweeps.fast_p_plot()->graph(i)->pen().color();
        const GenerationMatrix& m = generations.model()->matrix();
        for (int i = 0; i < static_cast<int>(m.generations.size()); ++i)
            if (m.generations[static_cast<std::size_t>(i)] == kGen)
                on_generations = generations.fast_p_plot()->graph(i)->pen().color();
        QVERIFY(on_sweeps.isValid() && on_generations.isValid());
        QCOMPARE(on_sweeps.name(), on_generations.name());
        QCOMPARE(m.store_generations.size(), std::size_t(2));
    }

    // The Sweeps tab's curve is its table: at every p of the table the curve reads the table's value.
    void sweeps_curve_reads_its_table() {
        SweepsView view;
        QSignalSpy loaded(&view, &SweepsView::loaded);
        view.set_store(t_.path);
        QVERIFY(loaded.wait(10000));
        view.show_sweep(t_.sweep);
        QVERIFY(loaded.wait(10000));
        const auto& row = view.table().generations.at(0);
        const QCPGraph* graph = view.fast_p_plot()->graph(0);
        for (double p : {1.0, 1.5, 2.0, 4.0}) {
            QCOMPARE(curve_at(graph, p), row.fast_p(p));
        }
        QCOMPARE(curve_at(graph, 0.5), row.fast_p(0.5));
        // And a pair correct without a speedup (an eval-like pair) drops out just above p = 0.
        SweepGenerationRow eval_like;
        eval_like.add({true, std::nullopt});
        eval_like.add({true, 2.0, 1.5, 2.5, Verdict::Faster});
        const auto steps = sweep_fast_p_steps(eval_like, 3);
        double at_one = 0;
        for (const auto& [p, value] : steps) {
            at_one = p <= 1 ? value : at_one;
        }
        QCOMPARE(at_one, eval_like.fast_p(1));
        QCOMPARE(at_one, 0.5);
    }

    // Flags by severity: the suspicious one first, the CUDA runtime's three as info, reasons on hover.
    void flags_grouped_by_severity() {
        const Store store = Store::open_read_only(t_.path.toStdString());
        const SplitSummary split = split_summary(store.get_run(t_.ambiguous)->summary);
        QCOMPARE(split.verdict, QStringLiteral("5 trial(s) match"));
        QCOMPARE(static_cast<int>(split.flags.size()), 4);
        QVERIFY(split.flags.front().severity == FlagSeverity::Suspect);
        QVERIFY(split.flags.front().text.startsWith(QStringLiteral("calls NCCL collective")));
        QCOMPARE(split.count(FlagSeverity::Info), 3);
        QVERIFY(summary_cell_text(split).startsWith(
            QStringLiteral("5 trial(s) match ⚠ 1 suspect · 3 info: calls NCCL")));
        QVERIFY(flags_tooltip(split).contains(QStringLiteral("static CUDA runtime")));
        // A PKB solution's crash in the Runs list: its exception, not the traceback's first frame.
        const SplitSummary crash = split_summary("rank 0 exited with code 4 in phase compile (trial 0): "
                                                 "solution_error: the candidate raised on rank 0, "
                                                 "trial 0:\nTraceback (most recent call last):\n  File "
                                                 "\"/x/pkbw_pkb_candidate.py\", line 1070, in serve\n"
                                                 "    reply, reply_fds = handler(message, fds)\nValueError: "
                                                 "not enough values to unpack (expected 3, got 2)");
        QCOMPARE(
            summary_cell_text(crash),
            QStringLiteral(
                "rank 0 exited with code 4 in phase compile (trial 0): solution_error: the candidate "
                "raised on rank 0, trial 0: ValueError: not enough values to unpack (expected 3, got 2)"));
        // One of the three alone is the candidate's own doing: suspect.
        const SplitSummary alone =
            split_summary("1 trial(s) match; warning: loads code at run time (dlopen)");
        QVERIFY(alone.flags.at(0).severity == FlagSeverity::Suspect);
        // The timing distrust is invalidating, listed first.
        const SplitSummary untrusted = split_summary(kDistrust);
        QVERIFY(untrusted.flags.at(0).severity == FlagSeverity::Invalidating);
        // Its reasons are the flag's; the verdict says it once, in its words alone.
        QCOMPARE(untrusted.verdict, QStringLiteral("timing not trusted"));
        QCOMPARE(untrusted.flags.at(0).text, QString::fromLatin1(kDistrust));

        RunsModel model;
        QSignalSpy loaded(&model, &RunsModel::page_loaded);
        model.set_store(t_.path);
        QVERIFY(loaded.wait(5000));
        for (int r = 0; r < model.rowCount(); ++r) {
            if (model.run_id(r) == t_.ambiguous) {
                QVERIFY(model.index(r, RunsModel::Summary)
                            .data()
                            .toString()
                            .contains(QStringLiteral("1 suspect")));
                QVERIFY(model.index(r, RunsModel::Summary)
                            .data(Qt::ToolTipRole)
                            .toString()
                            .contains(QStringLiteral("[suspect] calls NCCL collective")));
            }
        }
    }

    // Flags stored with their severity (schema 8) take the engine's word, not the GUI's reading of the
    // text: a flag whose words the GUI would call suspect is info when the engine said so, with its
    // reason; info flags absent from the summary are listed; a verdict warning is classified by its
    // words; the invalidating distrust is kept once.
    void stored_flags_take_the_engines_severity() {
        const std::string summary =
            "1 trial(s) match; warning: starts processes (fork); warning: sandbox: no Landlock";
        const std::vector<RunFlagRow> stored = {
            {1, 0, "info", "starts processes (fork)", "in a library it links, not the candidate's own code"},
            {1, 1, "info", "calls cuBLAS (cublasGemmEx)", "cuBLAS in the candidate's own code"},
            {1, 2, "warning", "sandbox: no Landlock", ""}};
        QVERIFY(split_summary(summary).flags.front().severity == FlagSeverity::Suspect); // the words alone
        const SplitSummary split = split_summary(summary, stored);
        QCOMPARE(static_cast<int>(split.flags.size()), 3);
        QCOMPARE(split.count(FlagSeverity::Info), 2);
        QVERIFY(split.flags.front().text.startsWith(QStringLiteral("sandbox")));
        QVERIFY(split.flags.front().severity == FlagSeverity::Suspect); // "Landlock": the GUI's rule
        QVERIFY(flags_tooltip(split).contains(QStringLiteral("in a library it links")));
        const SplitSummary untrusted =
            split_summary(kDistrust, {{1, 0, "warning", "starts host threads (std::thread)", ""}});
        QVERIFY(untrusted.flags.at(0).severity == FlagSeverity::Invalidating);
        QCOMPARE(static_cast<int>(std::count_if(
                     untrusted.flags.begin(), untrusted.flags.end(),
                     [](const RunFlag& f) { return f.severity == FlagSeverity::Invalidating; })),
                 1);
        QCOMPARE(split_summary(summary, {}).flags.size(), split_summary(summary).flags.size());
        // A borderline timed call (an honest kernel's summation order; the H200's tuned 46) is information,
        // not a suspicion: the one warning of that run no longer reads "suspect" in the Runs list.
        const SplitSummary borderline =
            split_summary("5 trial(s) match",
                          {{1, 0, "warning",
                            "numerically borderline on fresh inputs: a few elements beyond the tolerance "
                            "in 1 of 50 timed calls of block 5",
                            ""}});
        QVERIFY(borderline.flags.at(0).severity == FlagSeverity::Info);
        QVERIFY(!summary_cell_text(borderline).contains(QStringLiteral("suspect")));
    }

    // pkbw-gui --screenshot FILE --tab 2 prints what Perf says first: the reason, not a number.
    void screenshot_prints_the_perf_headline() {
        const QString png = test::temp_path(QStringLiteral("trust-perf.png"));
        QProcess gui;
        gui.setProcessChannelMode(QProcess::MergedChannels);
        gui.start(QStringLiteral(PKBW_BINARY_DIR "/bin/pkbw-gui"),
                  {QStringLiteral("--store"), t_.path, QStringLiteral("--run"), QString::number(t_.untrusted),
                   QStringLiteral("--tab"), QStringLiteral("2"), QStringLiteral("--screenshot"), png});
        QVERIFY(gui.waitForFinished(60000));
        const QString out = QString::fromUtf8(gui.readAll());
        QVERIFY2(out.contains(QStringLiteral("pkbw-gui: tab: Perf")), qPrintable(out));
        QVERIFY2(out.contains(
                     QStringLiteral("pkbw-gui: headline: No speedup: timing not trusted (invalid_timing).")),
                 qPrintable(out));
        QVERIFY2(!out.contains(QStringLiteral("3.385")), qPrintable(out));
    }
};

QTEST_MAIN(TestTrust)
#include "tst_trust.moc"
