// Exchanges and the agent trajectory beside a run's sources, on real data made here: the scripted
// model of tests/generate drives pkbw agent on the host backend (wrong, does not compile, right) and
// pkbw generate writes a candidate that pkbw eval judges (agent_fixture.h).
#include "agent_fixture.h"
#include "fixtures.h"
#include "generationpanel.h"
#include "mainwindow.h"
#include "pkbw/core/generation_store.h"
#include "rungeneration.h"
#include "runview.h"
#include "sourceview.h"

#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QtTest>

using namespace pkbw;
using namespace pkbw::app;

class TestGeneration : public QObject {
    Q_OBJECT
    test::AgentFixture fixture_;
    std::vector<AgentAttemptRow> attempts_;

    // Opens `run_id` in a main window and waits for the Sources tab's generation panels.
    void open(MainWindow& window, qint64 run_id) {
        QSignalSpy opened(&window, &MainWindow::store_opened);
        window.open_store(QString::fromStdString(fixture_.store.string()));
        QVERIFY(opened.wait(10000));
        QSignalSpy generation(window.source_view(), &SourceView::generation_loaded);
        window.open_run(run_id);
        QVERIFY(generation.wait(20000));
    }

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test"));
        const QString pkbw = QStringLiteral(PKBW_BINARY_DIR "/bin/pkbw");
        if (!QFile::exists(pkbw)) {
            QSKIP("pkbw is not built (ninja pkbw pkbw-rank pkbw-candidate)");
        }
        const QString dir = test::temp_path(QStringLiteral("generation"));
        QDir(dir).removeRecursively();
        qputenv("PKBW_CACHE_DIR", (dir + QStringLiteral("/cache")).toUtf8());
        try {
            fixture_ = test::make_agent_store(dir.toStdString(), pkbw.toStdString(), PKBW_SOURCE_ROOT);
        } catch (const std::exception& e) {
            QFAIL(e.what());
        }
        const Store store = Store::open_read_only(fixture_.store);
        attempts_ = agent_attempts(store, fixture_.agent_generation);
        QCOMPARE(static_cast<int>(attempts_.size()), 3);
    }

    void agent_run_shows_its_trajectory() {
        MainWindow window;
        const qint64 middle = *attempts_[1].run_id; // the attempt that did not compile
        open(window, middle);
        SourceView* sources = window.source_view();
        QVERIFY(sources->has_trajectory());
        QVERIFY(sources->has_exchanges());
        QCOMPARE(sources->lower_tabs()->currentWidget(), sources->trajectory());
        const QTableWidget* t = sources->trajectory()->table();
        QCOMPARE(t->rowCount(), 3);
        const QStringList verdicts{QStringLiteral("mismatch"), QStringLiteral("compile_error"),
                                   QStringLiteral("pass")};
        for (int row = 0; row < 3; ++row) {
            QCOMPARE(t->item(row, 0)->text(), QString::number(row + 1));
            QCOMPARE(t->item(row, 1)->text(), row == 0 ? QStringLiteral("-") : QString::number(row));
            QCOMPARE(t->item(row, 2)->text(), verdicts[row]);
            QCOMPARE(t->item(row, 6)->text(),
                     QString::number(*attempts_[static_cast<std::size_t>(row)].run_id));
        }
        // The candidate file holds the last attempt now; the Sources show attempt 2's text, from the
        // store: the run's archived source (the code it judged), else the attempt's recorded source.
        QTRY_VERIFY_WITH_TIMEOUT(sources->shown_right().contains(QStringLiteral("sum_the_peers(ctx);")),
                                 10000);
        QVERIFY2(sources->right_title().contains(QStringLiteral("archived in the store")) ||
                     sources->right_title().contains(QStringLiteral("attempt 2's source")),
                 qPrintable(sources->right_title()));
        QVERIFY(t->item(1, 0)->font().bold()); // the open run's attempt
        QVERIFY(!t->item(0, 0)->font().bold());
        QVERIFY2(sources->trajectory()->summary().contains(QStringLiteral("this run is attempt 2")),
                 qPrintable(sources->trajectory()->summary()));
        // Attempt 2 against attempt 1: the copy replaced by the undeclared helper.
        const QString diff = sources->trajectory()->shown_diff();
        QVERIFY2(diff.contains(QStringLiteral("+     sum_the_peers(ctx);")), qPrintable(diff));
        QVERIFY2(diff.contains(QStringLiteral("-     std::memcpy(ctx.output(0).data")), qPrintable(diff));
        QVERIFY2(diff.contains(QStringLiteral("  extern \"C\" int pkbw_solution")), qPrintable(diff));
        // The last attempt against the one that did not compile.
        sources->trajectory()->select(2);
        QVERIFY(sources->trajectory()->shown_diff().contains(QStringLiteral("-     sum_the_peers(ctx);")));
        // Double-clicking an attempt opens its run.
        QSignalSpy activated(sources, &SourceView::run_activated);
        emit const_cast<QTableWidget*>(t)->cellDoubleClicked(2, 0);
        QCOMPARE(activated.count(), 1);
        QCOMPARE(activated.at(0).at(0).toLongLong(), *attempts_[2].run_id);
    }

    void agent_run_shows_the_conversation() {
        MainWindow window;
        open(window, *attempts_[2].run_id);
        // The last attempt is what the file holds: the file itself is shown.
        QTRY_VERIFY_WITH_TIMEOUT(window.source_view()->shown_right().contains(QStringLiteral("sym.peers")),
                                 10000);
        QVERIFY(!window.source_view()->right_title().contains(QStringLiteral("as pkbw agent recorded it")));
        ExchangesPanel* e = window.source_view()->exchanges();
        const QTableWidget* t = e->table();
        QCOMPARE(t->rowCount(), 3); // one request per attempt
        const Store store = Store::open_read_only(fixture_.store);
        const auto exchanges = generation_exchanges(store, fixture_.agent_generation);
        for (int row = 0; row < 3; ++row) {
            const ExchangeRow& x = exchanges[static_cast<std::size_t>(row)];
            QCOMPARE(t->item(row, 0)->text(), QString::number(row + 1)); // attempt
            QCOMPARE(t->item(row, 2)->text(), QStringLiteral("saved"));
            QCOMPARE(t->item(row, 3)->text(), QStringLiteral("stop"));
            QCOMPARE(t->item(row, 4)->text(), QStringLiteral("200"));
            QCOMPARE(t->item(row, 5)->text(), QString::number(*x.input_tokens));
            QCOMPARE(t->item(row, 6)->text(), QString::number(*x.output_tokens));
            QVERIFY(x.latency_ms.has_value());
            QCOMPARE(t->item(row, 7)->text(), QString::number(*x.latency_ms, 'f', 0));
        }
        QCOMPARE(t->item(0, 5)->text(), QStringLiteral("812"));
        QCOMPARE(t->item(2, 6)->text(), QStringLiteral("171"));
        // The last exchange is shown: the reply with the right candidate, and the prompt with the
        // verdict of the attempt before (the compile error, with its line).
        QVERIFY2(e->shown_reply().contains(QStringLiteral("Sum every peer's buffer.")),
                 qPrintable(e->shown_reply()));
        QVERIFY2(e->shown_prompt().contains(QStringLiteral("line 5")),
                 qPrintable(e->shown_prompt().right(2000)));
        e->select(0);
        QVERIFY(e->shown_reply().contains(QStringLiteral("Copy the input.")));
        QVERIFY(e->shown_prompt().contains(QStringLiteral("── user ──")));
        QVERIFY2(e->summary().contains(QStringLiteral("agent generation")), qPrintable(e->summary()));
        QVERIFY2(e->summary().contains(QStringLiteral("3 requests, 3646 tokens in, 293 out")),
                 qPrintable(e->summary()));
    }

    void generated_candidate_shows_its_exchange() {
        MainWindow window;
        open(window, fixture_.generated_run);
        SourceView* sources = window.source_view();
        QVERIFY(sources->has_exchanges());
        QVERIFY(!sources->has_trajectory()); // pkbw generate makes no trajectory
        QCOMPARE(sources->lower_tabs()->currentWidget(), sources->exchanges());
        const QTableWidget* t = sources->exchanges()->table();
        QCOMPARE(t->rowCount(), 1);
        QCOMPARE(t->item(0, 5)->text(), QStringLiteral("950"));
        QCOMPARE(t->item(0, 6)->text(), QStringLiteral("140"));
        QVERIFY(sources->exchanges()->shown_reply().contains(QStringLiteral("Gather every rank's block.")));
        QVERIFY(sources->exchanges()->summary().startsWith(QStringLiteral("generate generation")));
    }

    void other_runs_show_neither() {
        // A run whose candidate no generation wrote: the tabs stay hidden.
        const QString path = test::temp_path(QStringLiteral("plain.db"));
        QFile::remove(path);
        std::int64_t id = 0;
        {
            Store store = Store::open(path.toStdString());
            id = test::add_perf_run(store, "2_allgather", "solutions_cuda_bf16_none_anthropic_claude", 2.0,
                                    1.0);
            const RunGeneration g = load_run_generation(store, *store.get_run(id));
            QVERIFY(!g.found());
            QVERIFY(g.exchanges.empty() && g.trajectory.empty());
        }
        MainWindow window;
        QSignalSpy opened(&window, &MainWindow::store_opened);
        window.open_store(path);
        QVERIFY(opened.wait(10000));
        QSignalSpy generation(window.source_view(), &SourceView::generation_loaded);
        window.open_run(id);
        QVERIFY(generation.wait(20000));
        QVERIFY(!window.source_view()->has_exchanges());
        QVERIFY(!window.source_view()->has_trajectory());
    }

    void attempt_diff_marks_lines() {
        QCOMPARE(attempt_diff(QStringLiteral("a\nb\nc"), QStringLiteral("a\nx\nc")),
                 QStringLiteral("  a\n- b\n+ x\n  c"));
        QCOMPARE(attempt_diff(QString(), QStringLiteral("a\nb")), QStringLiteral("+ a\n+ b"));
    }

    // An attempt stored before the agent withheld untrusted speedups keeps one: the trajectory shows it
    // withheld ("untrusted"), as every other surface does; a clean pass keeps its speedup.
    void trajectory_withholds_an_untrusted_attempts_speedup() {
        RunGeneration g;
        GenerationRow row;
        g.generation = row;
        AgentAttemptRow untrusted;
        untrusted.attempt = 1;
        untrusted.verdict = "invalid_timing";
        untrusted.speedup = 19408.5;
        AgentAttemptRow clean = untrusted;
        clean.attempt = 2;
        clean.verdict = "pass";
        clean.speedup = 1.31;
        g.trajectory = {untrusted, clean};
        g.trajectory_speedups = {PairOutcome{true, 19408.5, 100.0, 20000.0, Verdict::Faster, std::nullopt},
                                 PairOutcome{true, 1.31, 1.201, 1.402, Verdict::Faster, std::nullopt}};
        TrajectoryPanel panel;
        panel.set_generation(g);
        QCOMPARE(panel.table()->item(0, 3)->text(), QStringLiteral("untrusted"));
        // Review: every speedup shown carries its verdict and interval, the trajectory's too.
        QCOMPARE(panel.table()->item(1, 3)->text(), QStringLiteral("1.310× faster [1.201–1.402]"));
        QVERIFY2(panel.table()->item(1, 3)->toolTip().contains(QStringLiteral("1.201")),
                 qPrintable(panel.table()->item(1, 3)->toolTip()));
    }
};

QTEST_MAIN(TestGeneration)
#include "tst_generation.moc"
