// The launcher: command line, protocol parsing into progress and log, cancel; and, once pkbw is
// built, a real host-backend run to completion.
#include "fixtures.h"
#include "launcherview.h"

#include <QSignalSpy>
#include <QtTest>

using namespace pkbw;
using namespace pkbw::app;

class TestLauncher : public QObject {
    Q_OBJECT
private slots:
    void arguments() {
        LauncherView v;
        v.set_store(QStringLiteral("/tmp/s.db"));
        v.set_problem(QStringLiteral("2_allgather"));
        v.set_solution(QStringLiteral("/x/sol.cu"));
        v.set_mode(QStringLiteral("eval"));
        v.set_ranks(4);
        v.set_trials(3);
        v.set_backend(QStringLiteral("host"));
        const QStringList a = v.arguments();
        QCOMPARE(a.first(), QStringLiteral("eval"));
        QVERIFY(a.join(QLatin1Char(' '))
                    .contains(QStringLiteral("--problem 2_allgather --solution /x/sol.cu --nproc 4")));
        QVERIFY(a.join(QLatin1Char(' ')).contains(QStringLiteral("--trials 3")));
        QVERIFY(a.join(QLatin1Char(' ')).contains(QStringLiteral("--backend host")));
        QVERIFY(a.join(QLatin1Char(' ')).contains(QStringLiteral("--store /tmp/s.db")));
        QCOMPARE(a.last(), QStringLiteral("--json"));
        v.set_mode(QStringLiteral("dryrun"));
        QVERIFY(!v.arguments().contains(QStringLiteral("--trials")));
        QVERIFY(!v.arguments().contains(QStringLiteral("--atol")));
    }
    void protocol_stream_drives_progress() {
        LauncherView v;
        v.set_executable(QStringLiteral(PKBW_TEST_SOURCE_DIR "/fake_pkbw.sh"));
        v.set_ranks(2);
        v.set_trials(2);
        v.set_mode(QStringLiteral("eval"));
        QSignalSpy finished(&v, &LauncherView::run_finished);
        QSignalSpy ended(&v, &LauncherView::process_ended);
        v.start();
        QVERIFY(ended.wait(10000));
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.first().first().toLongLong(), 7);
        QCOMPARE(v.final_status(), QStringLiteral("pass"));
        QCOMPARE(v.rank_progress(0), 100);
        QCOMPARE(v.rank_progress(1), 100);
        QVERIFY(v.log_text().contains(QStringLiteral("a stray line")));
        QVERIFY(v.log_text().contains(QStringLiteral("[rank 1] hello from rank 1")));
        QVERIFY(v.status_text().contains(QStringLiteral("Run 7 finished: pass")));
    }
    void malformed_protocol_lines_are_logged() {
        LauncherView v;
        v.handle_line("{\"event\":\"rank_result\",\"rank\":\"zero\"}");
        v.handle_line("{\"event\":\"run_started\",\"run_id\":3}");
        QVERIFY(v.log_text().contains(QStringLiteral("rank_result")));
        QCOMPARE(v.run_id(), 3);
    }
    void cancel_terminates() {
        LauncherView v;
        v.set_executable(QStringLiteral(PKBW_TEST_SOURCE_DIR "/fake_pkbw.sh"));
        v.set_problem(QStringLiteral("hang")); // the fake script waits for SIGTERM on this problem
        QSignalSpy started(&v, &LauncherView::run_started);
        QSignalSpy ended(&v, &LauncherView::process_ended);
        v.start();
        QVERIFY(started.wait(10000));
        QVERIFY(v.running());
        v.cancel();
        QVERIFY(ended.wait(15000));
        QCOMPARE(v.final_status(), QStringLiteral("interrupted"));
    }
    void real_pkbw_host_run() {
        const QString pkbw = QStringLiteral(PKBW_BINARY_DIR "/bin/pkbw");
        if (!QFileInfo(pkbw).isExecutable()) {
            QSKIP(
                "pkbw is not built in this tree (the driver has not landed on main): skipping the real run");
        }
        const QString solution = QStringLiteral(PKBW_SOURCE_ROOT "/problems/2_allgather/reference_host.cpp");
        if (!QFileInfo::exists(solution)) {
            QSKIP("problems/2_allgather/reference_host.cpp is missing");
        }
        LauncherView v;
        v.set_executable(pkbw);
        v.set_store(test::temp_path(QStringLiteral("launch.db")));
        v.set_problem(QStringLiteral("2_allgather"));
        v.set_solution(solution);
        v.set_mode(QStringLiteral("eval"));
        v.set_backend(QStringLiteral("host"));
        v.set_ranks(2);
        v.set_trials(2);
        QSignalSpy ended(&v, &LauncherView::process_ended);
        v.start();
        QVERIFY(ended.wait(170000));
        QCOMPARE(v.final_status(), QStringLiteral("pass"));
        QCOMPARE(v.rank_progress(0), 100);
        QCOMPARE(v.rank_progress(1), 100);
        QVERIFY(v.run_id() > 0);
    }
};

QTEST_MAIN(TestLauncher)
#include "tst_launcher.moc"
