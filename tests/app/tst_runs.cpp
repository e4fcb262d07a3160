// The runs (issue 19): stores that are refused rather than created, the CLI's default store, a damaged
// table, the runs list following the CLI and keeping the user's place, the tolerance table's fit and
// the speedup column. (The Generations tab's tests are in tst_generations_view.cpp, the Perf tab's
// plots in tst_perf_plots.cpp.)
#include "../damaged_store.h"
#include "fixtures.h"
#include "mainwindow.h"
#include "perfview.h"
#include "pkbw/core/store.h"
#include "runsbrowser.h"
#include "runsmodel.h"
#include "runview.h"
#include "theme.h"
#include "tolerancemodel.h"

#include <QDir>
#include <QProcess>
#include <QScopeGuard>
#include <QScreen>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>
#include <cmath>
#include <qcustomplot.h>
#include <sqlite3.h>

using namespace pkbw;
using namespace pkbw::app;
using test::add_run;
using test::one_eval_run_store;

class TestRuns : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test")); }

    // --- Stores and the runs list ---------------------------------------------------------------

    // Review defect 30: runs the CLI adds while the window is open appear without F5.
    void runs_list_follows_runs_the_cli_adds() {
        const QString path = test::temp_path(QStringLiteral("live.db"));
        {
            Store store = Store::open(path.toStdString());
            add_run(store, "1_allreduce", "solutions_cuda_bf16_none_a_b", RunMode::Eval, RunStatus::Pass,
                    std::nullopt, 1);
        }
        MainWindow window;
        window.set_refresh_interval(100);
        QSignalSpy opened(&window, &MainWindow::store_opened);
        window.open_store(path);
        QVERIFY(opened.wait(5000));
        QTRY_COMPARE_WITH_TIMEOUT(window.runs()->model()->total(), qint64(1), 5000);
        std::int64_t running = 0;
        {
            Store store = Store::open(path.toStdString());
            RunRecord run;
            run.problem_stem = "2_allgather";
            run.backend = "host";
            running = store.begin_run(run); // the CLI starts a run
        }
        QTRY_COMPARE_WITH_TIMEOUT(window.runs()->model()->total(), qint64(2), 5000);
        auto status_of_newest = [&] {
            RunsModel* m = window.runs()->model();
            for (int r = 0; r < m->rowCount(); ++r) {
                if (m->index(r, RunsModel::Id).data().toLongLong() == running) {
                    return m->index(r, RunsModel::Status).data().toString();
                }
            }
            return QString();
        };
        QTRY_COMPARE_WITH_TIMEOUT(status_of_newest(), QStringLiteral("running"), 5000);
        {
            Store store = Store::open(path.toStdString());
            store.finish_run(running, RunStatus::Mismatch, 1, "");
        }
        QTRY_COMPARE_WITH_TIMEOUT(status_of_newest(), QStringLiteral("mismatch"), 5000);
    }

    // The list reloads when the CLI adds a run (above): the user's selected run and scroll position
    // survive it, also beyond the first page of 256.
    void refresh_keeps_the_selected_run_and_the_scroll() {
        const QString path = test::temp_path(QStringLiteral("keep_place.db"));
        {
            Store store = Store::open(path.toStdString());
            test::add_many_runs(store, 300);
        }
        MainWindow window;
        window.resize(1200, 800);
        window.show();
        window.set_refresh_interval(100);
        QSignalSpy opened(&window, &MainWindow::store_opened);
        window.open_store(path);
        QVERIFY(opened.wait(5000));
        RunsModel* model = window.runs()->model();
        QTableView* view = window.runs()->view();
        QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 256, 5000);
        model->fetchMore({});
        QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 300, 5000);
        const int row = 280;
        const qint64 chosen = model->run_id(row);
        view->selectionModel()->setCurrentIndex(model->index(row, 0), QItemSelectionModel::ClearAndSelect |
                                                                          QItemSelectionModel::Rows);
        view->scrollTo(model->index(row, 0));
        const int scroll = view->verticalScrollBar()->value();
        QVERIFY(scroll > 0);
        {
            Store store = Store::open(path.toStdString());
            RunRecord run;
            run.problem_stem = "2_allgather";
            run.backend = "host";
            store.begin_run(run); // the CLI starts a run
        }
        QTRY_COMPARE_WITH_TIMEOUT(model->total(), qint64(301), 5000);
        QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 301, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(model->run_id(view->currentIndex().row()), chosen, 5000);
        QVERIFY(view->selectionModel()->isRowSelected(view->currentIndex().row(), {}));
        QCOMPARE(view->verticalScrollBar()->value(), scroll);
    }

    void mistyped_store_is_refused_default_is_created() {
        const QString typo = test::temp_path(QStringLiteral("nodir/x/runs.db"));
        MainWindow window;
        QSignalSpy opened(&window, &MainWindow::store_opened);
        QSignalSpy failed(&window, &MainWindow::store_failed);
        window.open_store(typo);
        QVERIFY(failed.wait(5000));
        QVERIFY(failed.first().first().toString().contains(QStringLiteral("no such store")));
        QVERIFY(!QFileInfo::exists(typo));
        QVERIFY(!QDir(test::temp_path(QStringLiteral("nodir"))).exists());
        const QString fresh = test::temp_path(QStringLiteral("default/pkbw/runs.db"));
        window.open_store(fresh, true);
        QVERIFY(opened.wait(5000));
        QVERIFY(QFileInfo::exists(fresh));
    }

    // Review defect 22: a first start (no recent store) opens the CLI's default store; a recent store
    // that still exists wins; one that is gone is skipped.
    void first_start_opens_the_clis_default_store() {
        QSettings().remove(QStringLiteral("stores/recent"));
        const QString fallback = test::temp_path(QStringLiteral("first-start/pkbw/runs.db"));
        qputenv("PKBW_STORE", fallback.toUtf8());
        bool is_default = false;
        QCOMPARE(MainWindow::startup_store(&is_default), fallback);
        QVERIFY(is_default);
        const QString recent = test::temp_path(QStringLiteral("recent.db"));
        { Store::open(recent.toStdString()); }
        QSettings().setValue(QStringLiteral("stores/recent"),
                             QStringList{test::temp_path(QStringLiteral("gone.db")), recent});
        QCOMPARE(MainWindow::startup_store(&is_default), recent);
        QVERIFY(!is_default);
        QSettings().remove(QStringLiteral("stores/recent"));
        MainWindow window;
        QSignalSpy opened(&window, &MainWindow::store_opened);
        const QString start = MainWindow::startup_store(&is_default);
        window.open_store(start, is_default);
        QVERIFY(opened.wait(5000));
        QCOMPARE(window.store_path(), fallback);
        QVERIFY(QFileInfo::exists(fallback)); // created there, as pkbw would on its first run
        qunsetenv("PKBW_STORE");
    }

    // Review defect 22: without $PKBW_STORE the first start opens the CLI's default store,
    // $XDG_DATA_HOME/pkbw/runs.db, else ~/.local/share/pkbw/runs.db, the very file pkbw itself names
    // under the same environment (`pkbw runs` says "no store at <path>" when it is missing).
    void startup_store_is_the_clis_default_without_pkbw_store() {
        QSettings().remove(QStringLiteral("stores/recent"));
        const QByteArray saved_store = qgetenv("PKBW_STORE"), saved_xdg = qgetenv("XDG_DATA_HOME"),
                         saved_home = qgetenv("HOME");
        const bool had_store = qEnvironmentVariableIsSet("PKBW_STORE"),
                   had_xdg = qEnvironmentVariableIsSet("XDG_DATA_HOME");
        auto restore = qScopeGuard([&] {
            had_store ? qputenv("PKBW_STORE", saved_store) : qunsetenv("PKBW_STORE");
            had_xdg ? qputenv("XDG_DATA_HOME", saved_xdg) : qunsetenv("XDG_DATA_HOME");
            qputenv("HOME", saved_home);
        });
        const QString pkbw = QStringLiteral(PKBW_BINARY_DIR "/bin/pkbw");
        // The store pkbw itself would use under the current environment.
        auto clis_store = [&]() -> QString {
            QProcess p;
            p.start(pkbw, {QStringLiteral("runs"), QStringLiteral("--json")});
            if (!p.waitForFinished(20000)) {
                return QStringLiteral("(pkbw runs did not finish)");
            }
            const QString err = QString::fromUtf8(p.readAllStandardError());
            const QRegularExpressionMatch m =
                QRegularExpression(QStringLiteral("no store at (\\S+)")).match(err);
            return m.hasMatch() ? m.captured(1) : QStringLiteral("(pkbw said: %1)").arg(err);
        };
        const bool have_pkbw = QFileInfo(pkbw).isExecutable();
        if (!have_pkbw) {
            qInfo("pkbw is not built: the store is checked against the documented paths only");
        }
        qunsetenv("PKBW_STORE");
        const QString xdg = test::temp_path(QStringLiteral("xdg-data"));
        qputenv("XDG_DATA_HOME", xdg.toUtf8());
        bool is_default = false;
        QCOMPARE(MainWindow::startup_store(&is_default), xdg + QStringLiteral("/pkbw/runs.db"));
        QVERIFY(is_default);
        if (have_pkbw) {
            QCOMPARE(clis_store(), xdg + QStringLiteral("/pkbw/runs.db"));
        }
        qunsetenv("XDG_DATA_HOME");
        const QString home = test::temp_path(QStringLiteral("home"));
        qputenv("HOME", home.toUtf8());
        QCOMPARE(MainWindow::startup_store(&is_default), home + QStringLiteral("/.local/share/pkbw/runs.db"));
        QVERIFY(is_default);
        if (have_pkbw) {
            QCOMPARE(clis_store(), home + QStringLiteral("/.local/share/pkbw/runs.db"));
        }
    }

    // Review defect 21: a Python traceback in a run's summary keeps its lines and carets in the header
    // (the first line inline, the rest preformatted), escaped.
    void header_keeps_a_traceback_as_lines() {
        auto data = std::make_shared<RunData>();
        data->run.id = 5;
        data->run.problem_stem = "2_allgather";
        data->run.mode = RunMode::Eval;
        data->run.status = RunStatus::Error;
        data->run.summary =
            "rank 0: solution_error\nTraceback (most recent call last):\n  File \"sol.py\", line 3\n"
            "    x = <bad>\n        ^";
        RunView view;
        view.set_data(data);
        const QString header = view.header_text();
        QVERIFY2(header.contains(QStringLiteral("rank 0: solution_error<pre")), qPrintable(header));
        QVERIFY2(header.contains(
                     QStringLiteral("Traceback (most recent call last):\n  File &quot;sol.py&quot;, line 3\n"
                                    "    x = &lt;bad&gt;\n        ^</pre>")),
                 qPrintable(header));
    }

    // Review defect 23: one damaged table (here: gone) costs only what it held. The run opens with
    // its grid of rank results; the header names the part not shown and the table, not a statement's
    // text cut at 80 characters.
    void a_damaged_table_costs_only_its_part_of_the_run() {
        const auto [path, id] = one_eval_run_store(QStringLiteral("damaged-table"));
        {
            sqlite3* db = nullptr;
            QCOMPARE(sqlite3_open(path.toUtf8().constData(), &db), SQLITE_OK);
            QCOMPARE(sqlite3_exec(db, "DROP TABLE tensor_results", nullptr, nullptr, nullptr), SQLITE_OK);
            sqlite3_close(db);
        }
        RunView view;
        view.set_store(path);
        QSignalSpy loaded(&view, &RunView::run_loaded);
        QSignalSpy failed(&view, &RunView::load_failed);
        view.open_run(id);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(failed.count(), 0);
        QVERIFY(!view.data()->ranks.empty());
        const QString header = view.header_text();
        QVERIFY2(header.contains(QStringLiteral("tensor results: store ")) &&
                     header.contains(QStringLiteral("cannot read or write table tensor_results")) &&
                     header.contains(QStringLiteral("no such table")),
                 qPrintable(header));
        QVERIFY2(!header.contains(QStringLiteral("SELECT")), qPrintable(header));
    }

    // Review defect 23 (old), the part a damaged page shows: the table reads but its page is bad, so
    // SQLite fails while stepping, where the statement's text used to reach the header ("\"SELECT side,
    // ... ORDE\" failed: database disk image is malformed"). Now the part, the table and what to do;
    // and a text file opened as a store is "not a pkbw store", not a PRAGMA that failed.
    void a_damaged_page_is_named_in_words_and_a_text_file_is_no_store() {
        const auto [path, id] = one_eval_run_store(QStringLiteral("damaged-page"));
        test::damage_table(path.toStdString(), "perf_samples");
        RunView view;
        view.set_store(path);
        QSignalSpy loaded(&view, &RunView::run_loaded);
        view.open_run(id);
        QVERIFY(loaded.wait(10000));
        QVERIFY(!view.data()->ranks.empty());
        const QString header = view.header_text();
        QVERIFY2(header.contains(QStringLiteral("perf samples: store ")) &&
                     header.contains(QStringLiteral("cannot read table perf_samples: the file is damaged")) &&
                     header.contains(QStringLiteral("pkbw store check")),
                 qPrintable(header));
        QVERIFY2(!header.contains(QStringLiteral("SELECT")) && !header.contains(QStringLiteral("\" failed")),
                 qPrintable(header));

        const QString notes = test::temp_path(QStringLiteral("notes.txt"));
        {
            QFile file(notes);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write("meeting notes, long enough to fill an SQLite header and then some more text\n");
        }
        MainWindow window;
        QSignalSpy failed(&window, &MainWindow::store_failed);
        window.open_store(notes);
        QVERIFY(failed.count() > 0 || failed.wait(5000));
        const QString message = failed.first().first().toString();
        QVERIFY2(message.contains(QStringLiteral("not a pkbw store")) &&
                     !message.contains(QStringLiteral("PRAGMA")),
                 qPrintable(message));
    }

    // Review defect 24: at the window's default size the tolerance explorer needs no sideways
    // scrolling; the first error is elided, whole in its tooltip.
    void tolerance_table_fits_without_scrolling() {
        const auto [path, id] = one_eval_run_store(QStringLiteral("tolerance-fit"));
        MainWindow window;
        window.resize(1500, 950);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QSignalSpy opened(&window, &MainWindow::store_opened);
        window.open_store(path);
        QVERIFY(opened.wait(5000));
        QSignalSpy rescored(window.run_view(), &RunView::rescore_ready);
        window.open_run(id);
        QVERIFY(rescored.wait(10000));
        auto* table = window.run_view()->findChild<QTableView*>(QStringLiteral("toleranceTable"));
        QVERIFY(table != nullptr);
        QVERIFY(table->model()->rowCount() > 0);
        QCoreApplication::processEvents();
        QVERIFY2(!table->horizontalScrollBar()->isVisible(),
                 qPrintable(QStringLiteral("viewport %1 px, columns %2 px")
                                .arg(table->viewport()->width())
                                .arg(table->horizontalHeader()->length())));
        // The figures of a real 1024x1024 mismatch (the H200 store's all-zero candidate) fit too.
        auto* model = qobject_cast<ToleranceModel*>(table->model());
        QVERIFY(model != nullptr);
        Rescored big;
        big.trial = 4;
        big.mismatch_count = 1048576;
        big.worst_ratio = 12345.6;
        big.min_passing_atol = 0.0123456;
        big.first_error = "output: tensors not allclose (atol=0.01, rtol=0.01); max_abs_diff=1 "
                          "mismatches=1048576/1048576 first at [0, 0]";
        model->set_rows({big, big});
        QCoreApplication::processEvents();
        QVERIFY2(!table->horizontalScrollBar()->isVisible(),
                 qPrintable(QStringLiteral("viewport %1 px, columns %2 px")
                                .arg(table->viewport()->width())
                                .arg(table->horizontalHeader()->length())));
        // The first error, whole, under the table: of the first failing row, then of the row chosen.
        QVERIFY2(window.run_view()->first_error_text().startsWith(QStringLiteral("Trial 4, rank 0: output: "
                                                                                 "tensors not allclose")),
                 qPrintable(window.run_view()->first_error_text()));
        QVERIFY(window.run_view()->first_error_text().endsWith(QStringLiteral("first at [0, 0]")));
        big.trial = 1;
        big.rank = 1;
        big.first_error = "output: other";
        Rescored first = model->rows()[0];
        model->set_rows({first, big});
        table->selectionModel()->setCurrentIndex(model->index(1, 0), QItemSelectionModel::ClearAndSelect);
        QCOMPARE(window.run_view()->first_error_text(), QStringLiteral("Trial 1, rank 1: output: other"));
        QCOMPARE(model->index(1, ToleranceModel::Verdict).data(Qt::ToolTipRole).toString(),
                 QStringLiteral("output: other"));
        for (int c = 0; c < ToleranceModel::Message; ++c) {
            const QString text = model->index(0, c).data().toString();
            const int need = table->fontMetrics().horizontalAdvance(text);
            QVERIFY2(table->columnWidth(c) >= need,
                     qPrintable(QStringLiteral("column %1 (%2): %3 px for %4 px")
                                    .arg(c)
                                    .arg(text)
                                    .arg(table->columnWidth(c))
                                    .arg(need)));
        }
    }

    // Review point 24: a first start (nothing saved) opens at a laptop's 1366x768, or the screen's room
    // when smaller, and at that size the runs list of a store with a timed run needs no sideways
    // scrolling (Qt's default of about 1020x670 did).
    void first_start_opens_at_a_laptops_size_with_the_runs_list_whole() {
        QSettings().remove(QStringLiteral("window/geometry"));
        const QString path = test::temp_path(QStringLiteral("first-size.db"));
        QFile::remove(path);
        {
            Store store = Store::open(path.toStdString());
            test::add_perf_run(store, "1_allreduce", "solutions_cuda_bf16_none_anthropic_claude", 2.0, 1.0);
        }
        MainWindow window;
        const QSize room = window.screen()->availableGeometry().size();
        QCOMPARE(window.size(), QSize(1366, 768).boundedTo(room));
        QCOMPARE(window.first_start_size(), QSize(1366, 768).boundedTo(room));
        window.resize(1366, 768);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QSignalSpy loaded(window.runs()->model(), &RunsModel::page_loaded);
        window.open_store(path);
        QVERIFY(loaded.wait(5000));
        QCoreApplication::processEvents();
        const QTableView* list = window.runs()->view();
        int columns = 0;
        for (int c = 0; c < list->model()->columnCount(); ++c)
            columns += list->columnWidth(c);
        QVERIFY2(
            columns <= list->viewport()->width() || list->horizontalScrollBar()->maximum() == 0,
            qPrintable(
                QStringLiteral("columns %1 px, viewport %2 px").arg(columns).arg(list->viewport()->width())));
    }

    void runs_list_has_a_speedup_column() {
        const QString path = test::temp_path(QStringLiteral("speedups.db"));
        {
            Store store = Store::open(path.toStdString());
            const auto perf = test::add_perf_run(store, "1_allreduce",
                                                 "solutions_cuda_bf16_none_anthropic_claude", 2.0, 1.0);
            // A perf run with PKB's figure too shows pkbw's own (whatever the summaries' order).
            store.add_perf_summary({perf, Side::Candidate, -1, "pkb_speedup", 1.9});
            add_run(store, "2_allgather", "solutions_cuda_bf16_none_openai_gpt-5.5", RunMode::Eval,
                    RunStatus::Pass, 1.25, 59, "pkb-cuda", "pkb_speedup");
        }
        RunsModel model;
        QSignalSpy loaded(&model, &RunsModel::page_loaded);
        model.set_store(path);
        QVERIFY(loaded.wait(5000));
        QStringList speedups;
        for (int r = 0; r < model.rowCount(); ++r) {
            speedups << model.index(r, RunsModel::Speedup).data().toString();
        }
        speedups.sort();
        QCOMPARE(speedups, (QStringList{QStringLiteral("1.250× (no interval) PKB"),
                                        QStringLiteral("2.000× (no interval)")}));
        QCOMPARE(model.headerData(RunsModel::Speedup, Qt::Horizontal, Qt::DisplayRole).toString(),
                 QStringLiteral("Speedup"));
    }

    // The Speedup column opens wide enough for a speedup with its verdict, interval and PKB's disagreement
    // (the H200 store's list cut "1.247× faste…" and hid the rest).
    void runs_list_speedup_column_shows_verdict_and_interval_whole() {
        RunsBrowser browser;
        const QString widest = QStringLiteral("1.131× ambiguous [0.850–1.415] ≠ PKB 0.692×");
        const int need = browser.view()->fontMetrics().horizontalAdvance(widest) + 8; // the cell's margins
        QVERIFY2(browser.view()->columnWidth(RunsModel::Speedup) >= need,
                 qPrintable(QStringLiteral("%1 px for %2 px")
                                .arg(browser.view()->columnWidth(RunsModel::Speedup))
                                .arg(need)));
    }

    // A list with no speedup at all (the H200 eval sweep of PKB's 82 solutions) gives the Speedup column
    // only its header's width; a speedup anywhere widens it again.
    void runs_list_without_speedups_keeps_the_column_narrow() {
        const QString path = test::temp_path(QStringLiteral("eval_only.db"));
        {
            Store store = Store::open(path.toStdString());
            add_run(store, "2_allgather", "solutions_cuda_bf16_none_openai_gpt-5.5", RunMode::Eval,
                    RunStatus::Pass, std::nullopt, 0, "cuda");
        }
        RunsBrowser browser;
        const int wide = browser.view()->columnWidth(RunsModel::Speedup);
        QSignalSpy loaded(browser.model(), &RunsModel::page_loaded);
        browser.set_store(path);
        QVERIFY(loaded.wait(5000));
        const int narrow = browser.view()->columnWidth(RunsModel::Speedup);
        QVERIFY2(narrow < wide / 2, qPrintable(QStringLiteral("%1 px of %2").arg(narrow).arg(wide)));
        {
            Store store = Store::open(path.toStdString());
            test::add_perf_run(store, "1_allreduce", "solutions_cuda_bf16_none_anthropic_claude", 2.0, 1.0);
        }
        browser.refresh();
        QVERIFY(loaded.wait(5000));
        QCOMPARE(browser.view()->columnWidth(RunsModel::Speedup), wide);
    }
};

QTEST_MAIN(TestRuns)
#include "tst_runs.moc"
