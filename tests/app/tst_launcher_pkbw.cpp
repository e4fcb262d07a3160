// The launcher on a real pkbw and on pkbw's problem list: Cancel interrupts a real host-backend run
// and its ranks, the problem list loads without blocking the form (or refuses the run when pkbw cannot
// list its problems), and, once pkbw is built, a real host-backend run to completion.
#include "fixtures.h"
#include "launcherview.h"
#include "pkbw/core/store.h"
#include "problembrowser.h"
#include "problemcatalog.h"

#include <QDir>
#include <QElapsedTimer>
#include <QSettings>
#include <QSignalSpy>
#include <QtTest>

using namespace pkbw;
using namespace pkbw::app;

namespace {
// The processes whose parent is `parent` (from /proc): pkbw's ranks while it runs them.
QList<qint64> children_of(qint64 parent) {
    QList<qint64> out;
    for (const QString& entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
        bool numeric = false;
        const qint64 pid = entry.toLongLong(&numeric);
        QFile status(QStringLiteral("/proc/%1/status").arg(entry));
        if (!numeric || !status.open(QIODevice::ReadOnly)) {
            continue;
        }
        for (const QByteArray& line : status.readAll().split('\n')) {
            if (line.startsWith("PPid:") && line.mid(5).trimmed().toLongLong() == parent) {
                out << pid;
            }
        }
    }
    return out;
}
// Whether `pid` is still a process that is not a zombie.
bool alive(qint64 pid) {
    QFile status(QStringLiteral("/proc/%1/status").arg(pid));
    return status.open(QIODevice::ReadOnly) && !status.readAll().contains("State:\tZ");
}

const QString kFake = QStringLiteral(PKBW_TEST_SOURCE_DIR "/fake_pkbw.sh");
} // namespace

class TestLauncherPkbw : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QSettings().remove(QStringLiteral("launcher")); // each test starts from the defaults
    }
    // The review's "keep" list: Cancel really interrupts pkbw. A real host-backend eval whose candidate
    // sleeps 2 s a trial (tests/adversarial/host/sleep_2s.cpp) is cancelled once its ranks run: pkbw ends
    // on the SIGTERM (well before the launcher's 10 s SIGKILL), the bars say "interrupted", and the store
    // holds the run as interrupted.
    void cancel_interrupts_a_real_pkbw_run() {
        const QString pkbw = QStringLiteral(PKBW_BINARY_DIR "/bin/pkbw");
        if (!QFileInfo(pkbw).isExecutable()) {
            QSKIP("pkbw is not built in this tree: skipping the real cancel");
        }
        const QString solution = QStringLiteral(PKBW_SOURCE_ROOT "/tests/adversarial/host/sleep_2s.cpp");
        QVERIFY2(QFileInfo::exists(solution), qPrintable(solution));
        const QString store = test::temp_path(QStringLiteral("cancel.db"));
        LauncherView v;
        v.set_executable(pkbw);
        v.set_store(store);
        v.set_problem_list({QStringLiteral("1_allreduce")});
        v.set_problem(QStringLiteral("1_allreduce"));
        v.set_solution(solution);
        v.set_mode(QStringLiteral("eval"));
        v.set_backend(QStringLiteral("host"));
        v.set_ranks(2);
        v.set_trials(5); // 10 s of sleeping at least: the cancel lands in the middle
        QSignalSpy started(&v, &LauncherView::run_started);
        QSignalSpy ended(&v, &LauncherView::process_ended);
        v.start();
        QVERIFY2(started.wait(30000), qPrintable(v.log_text()));
        // The ranks are running trials (a phase event reached the bars).
        QTRY_VERIFY2_WITH_TIMEOUT(v.rank_text(0).startsWith(QStringLiteral("trial")) ||
                                      v.rank_text(1).startsWith(QStringLiteral("trial")),
                                  qPrintable(v.rank_text(0) + QStringLiteral(" | ") + v.log_text()), 30000);
        QVERIFY(v.running());
        const qint64 run_id = v.run_id();
        QVERIFY(run_id > 0);
        const QList<qint64> ranks = children_of(v.process_id());
        QVERIFY2(ranks.size() >= 2, qPrintable(QString::number(ranks.size()))); // both ranks are running
        QElapsedTimer clock;
        clock.start();
        v.cancel();
        QVERIFY(ended.wait(15000));
        QVERIFY2(clock.elapsed() < 9000,
                 qPrintable(QString::number(clock.elapsed()))); // SIGTERM, not SIGKILL
        QVERIFY(!v.running());
        for (qint64 pid : ranks) {
            QVERIFY2(!alive(pid), qPrintable(QStringLiteral("rank process %1 outlived pkbw").arg(pid)));
        }
        QCOMPARE(v.final_status(), QStringLiteral("interrupted"));
        for (int r = 0; r < 2; ++r) {
            QVERIFY2(v.rank_text(r).startsWith(QStringLiteral("interrupted")), qPrintable(v.rank_text(r)));
        }
        const Store opened = Store::open(store.toStdString());
        const std::optional<RunRecord> run = opened.get_run(run_id);
        QVERIFY(run);
        QCOMPARE(QString::fromStdString(std::string(to_string(run->status))), QStringLiteral("interrupted"));
    }

    // pkbw's problem list comes from a child process watched by its signals: a launcher and a Problems
    // tab on a pkbw that answers after 2 s are built at once, the form says the list is loading, a
    // start waits for it and then runs; the browser fills in when it arrives.
    void problem_list_loads_without_blocking() {
        QElapsedTimer clock;
        clock.start();
        ProblemCatalogLoader loader(QStringLiteral(PKBW_TEST_SOURCE_DIR "/slow_problems_pkbw.sh"));
        LauncherView v(nullptr, &loader);
        ProblemBrowser browser(nullptr, nullptr, &loader);
        QVERIFY2(clock.elapsed() < 1000, qPrintable(QString::number(clock.elapsed())));
        QVERIFY(!loader.ready());
        QVERIFY(v.problem_list_loading());
        QVERIFY2(browser.description().startsWith(QStringLiteral("Loading the problem list")),
                 qPrintable(browser.description()));
        v.set_executable(kFake);
        v.set_problem(QStringLiteral("2_allgather"));
        v.set_solution(kFake);
        QVERIFY2(v.validate().contains(QStringLiteral("still loading")), qPrintable(v.validate()));
        QSignalSpy started(&v, &LauncherView::run_started);
        QSignalSpy ended(&v, &LauncherView::process_ended);
        v.start(); // waits for the list; Cancel drops the waiting start
        v.cancel();
        QVERIFY2(v.status_text().startsWith(QStringLiteral("Not started: cancelled")),
                 qPrintable(v.status_text()));
        v.start(); // waits for the list
        QVERIFY(!v.running());
        QVERIFY2(v.status_text().startsWith(QStringLiteral("Waiting for pkbw's problem list")),
                 qPrintable(v.status_text()));
        QVERIFY(ended.wait(15000));
        QVERIFY2(clock.elapsed() >= 1900, qPrintable(QString::number(clock.elapsed()))); // after the list
        QCOMPARE(started.count(), 1);
        QCOMPARE(v.final_status(), QStringLiteral("pass"));
        QVERIFY(!v.problem_list_loading());
        QCOMPARE(v.validate(), QString());
        QCOMPARE(browser.problems(),
                 (QStringList{QStringLiteral("1_allreduce"), QStringLiteral("2_allgather")}));
        // The typed problem was kept when the choices arrived.
        QCOMPARE(v.problems(), QStringList{QStringLiteral("2_allgather")});
    }
    // A pkbw that cannot list its problems: the start that waited for the list is refused with the
    // reason (the program, its exit code and its message), and nothing runs.
    void failing_problem_list_refuses_the_run() {
        const QString failing = QStringLiteral(PKBW_TEST_SOURCE_DIR "/failing_problems_pkbw.sh");
        ProblemCatalogLoader loader(failing);
        LauncherView v(nullptr, &loader);
        v.set_executable(kFake);
        v.set_problem(QStringLiteral("2_allgather"));
        v.set_solution(kFake);
        QSignalSpy loaded(&loader, &ProblemCatalogLoader::loaded);
        QSignalSpy started(&v, &LauncherView::run_started);
        v.start();
        QVERIFY(loaded.wait(10000));
        QVERIFY(!v.running());
        const QString status = v.status_text();
        QVERIFY2(
            status.startsWith(QStringLiteral("Not started: Cannot check the problem names: ") + failing +
                              QStringLiteral(" problems --json failed (exit 3): pkbw: no problems folder")),
            qPrintable(status));
        QTest::qWait(300);
        QCOMPARE(started.count(), 0);
        QVERIFY(v.validate().startsWith(QStringLiteral("Cannot check the problem names")));
        // And one that cannot even start.
        ProblemCatalogLoader missing(QStringLiteral("/nonexistent/pkbw"));
        LauncherView w(nullptr, &missing);
        QTRY_VERIFY_WITH_TIMEOUT(!w.problem_list_loading(), 5000);
        w.set_problem(QStringLiteral("2_allgather"));
        QVERIFY2(w.validate().contains(QStringLiteral("cannot start /nonexistent/pkbw")),
                 qPrintable(w.validate()));
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

QTEST_MAIN(TestLauncherPkbw)
#include "tst_launcher_pkbw.moc"
