// The launcher: command line, validation before pkbw starts, comma lists, protocol parsing into
// progress, verdicts and log, the remembered form, cancel (on the fake pkbw). A real pkbw and pkbw's
// problem list are tst_launcher_pkbw.cpp's.
#include "fixtures.h"
#include "launcherview.h"
#include "mainwindow.h"
#include "runview.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QtTest>

using namespace pkbw;
using namespace pkbw::app;

namespace {
const QString kFake = QStringLiteral(PKBW_TEST_SOURCE_DIR "/fake_pkbw.sh");

// A launcher on the fake pkbw with a form that passes validation (the script stands in as the
// solution file: it exists).
void fake_form(LauncherView& v, const QString& problem = QStringLiteral("2_allgather")) {
    v.set_executable(kFake);
    v.set_problem_list(
        {QStringLiteral("1_allreduce"), QStringLiteral("2_allgather"), QStringLiteral("hang")});
    v.set_problem(problem);
    v.set_solution(kFake);
}
// Starts the form's run (the fake pkbw) and waits for its process to end; false on a timeout.
bool start_and_wait(LauncherView& v) {
    QSignalSpy ended(&v, &LauncherView::process_ended);
    v.start();
    return ended.wait(10000);
}
} // namespace

class TestLauncher : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QSettings().remove(QStringLiteral("launcher")); // each test starts from the defaults
    }
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
        fake_form(v);
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
        QCOMPARE(v.rank_text(0), QStringLiteral("done · pass"));
    }
    void validation_before_pkbw_starts() {
        LauncherView v;
        fake_form(v, QStringLiteral("2_allgather,9_nope"));
        QSignalSpy ended(&v, &LauncherView::process_ended);
        v.start();
        QVERIFY(!v.running());
        QVERIFY2(v.status_text().contains(QStringLiteral("Unknown problem '9_nope'")),
                 qPrintable(v.status_text()));
        fake_form(v, QStringLiteral("2"));
        QCOMPARE(v.validate(), QString()); // a number names a problem too
        v.set_solution(QStringLiteral("/no/such/solution.cu"));
        QVERIFY(v.validate().contains(QStringLiteral("does not exist")));
        v.set_solution(QString());
        QVERIFY(v.validate().contains(QStringLiteral("solution file or a generation folder")));
        v.set_executable(QStringLiteral("/no/such/pkbw"));
        v.set_solution(kFake);
        QVERIFY(v.validate().contains(QStringLiteral("pkbw not found")));
        QCOMPARE(ended.count(), 0);
    }
    void comma_list_runs_every_problem() {
        LauncherView v;
        fake_form(v, QStringLiteral("2_allgather, 1_allreduce"));
        QCOMPARE(v.problems(), (QStringList{QStringLiteral("2_allgather"), QStringLiteral("1_allreduce")}));
        QVERIFY(v.arguments_for(QStringLiteral("1_allreduce"))
                    .join(QLatin1Char(' '))
                    .contains(QStringLiteral("--problem 1_allreduce")));
        QSignalSpy finished(&v, &LauncherView::run_finished);
        v.start();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 20000);
        QTRY_VERIFY_WITH_TIMEOUT(!v.running(), 5000);
        QVERIFY(v.log_text().contains(QStringLiteral("--problem 1_allreduce")));
        QVERIFY(v.log_text().contains(QStringLiteral("--problem 2_allgather")));
    }
    void bars_show_verdicts_perf_and_interruption() {
        LauncherView v;
        v.handle_line(R"({"event":"run_started","run_id":3,"world_size":2})");
        v.handle_line(R"({"event":"phase","rank":1,"phase":"compare","trial":0})");
        QVERIFY2(v.rank_text(1).startsWith(QStringLiteral("trial 1/1 · compare")),
                 qPrintable(v.rank_text(1)));
        v.handle_line(
            R"({"event":"rank_result","rank":1,"trial":0,"status":"mismatch","message":"","tensors":[]})");
        QVERIFY2(v.rank_text(1).startsWith(QStringLiteral("mismatch in trial 0")),
                 qPrintable(v.rank_text(1)));
        v.handle_line(R"({"event":"phase","rank":0,"phase":"perf","trial":0})");
        QCOMPARE(v.rank_text(0), QStringLiteral("perf · timing…"));
        // The perf phase's own progress: block k of N, then done at N.
        v.handle_line(
            R"({"event":"perf_progress","rank":0,"block":3,"blocks":12,"protocol":"pkbw","side":"candidate"})");
        QCOMPARE(v.rank_text(0), QStringLiteral("perf · block 3/12 (candidate pkbw)"));
        QCOMPARE(v.rank_bar(0)->maximum(), 12);
        QCOMPARE(v.rank_bar(0)->value(), 3);
        v.handle_line(R"({"event":"perf_result","rank":0,"protocol":"pkbw","side":"candidate"})");
        QCOMPARE(v.rank_bar(0)->value(), 3); // samples do not end a bar that counts blocks
        v.handle_line(
            R"({"event":"perf_progress","rank":0,"block":12,"blocks":12,"protocol":"pkbw","side":"reference"})");
        QCOMPARE(v.rank_bar(0)->value(), 12);
        v.handle_line(R"({"event":"rank_done","rank":1,"trials_run":1})");
        QCOMPARE(v.rank_text(1), QStringLiteral("done · mismatch in trial 0"));
        v.handle_line(
            R"({"event":"run_finished","run_id":3,"status":"interrupted","exit_code":130,"message":""})");
        QVERIFY2(v.rank_text(0).startsWith(QStringLiteral("interrupted")), qPrintable(v.rank_text(0)));
        v.handle_line(
            R"({"event":"run_finished","run_id":0,"status":"error","exit_code":2,"message":"bad"})");
        QVERIFY2(v.status_text().startsWith(QStringLiteral("pkbw refused the run")),
                 qPrintable(v.status_text()));
    }
    // Review defect 18: the size, --pkb-checkout, --all-trials and --keep-outputs reach pkbw's command
    // line (a dryrun never gets --all-trials), and a new launcher restores them.
    void new_options_reach_the_command_line_and_are_remembered() {
        {
            LauncherView v;
            fake_form(v);
            v.set_mode(QStringLiteral("eval"));
            v.findChild<QSpinBox*>(QStringLiteral("launchM"))->setValue(64);
            v.findChild<QSpinBox*>(QStringLiteral("launchN"))->setValue(32);
            v.findChild<QCheckBox*>(QStringLiteral("launchAllTrials"))->setChecked(true);
            v.findChild<QCheckBox*>(QStringLiteral("launchKeepOutputs"))->setChecked(true);
            v.set_pkb_checkout(QStringLiteral("/opt/pkb"));
            const QString args = v.arguments().join(QLatin1Char(' '));
            for (const char* want :
                 {"--m 64", "--n 32", "--pkb-checkout /opt/pkb", "--all-trials", "--keep-outputs"}) {
                QVERIFY2(args.contains(QLatin1String(want)), qPrintable(args));
            }
            v.set_mode(QStringLiteral("dryrun"));
            QVERIFY(!v.arguments().contains(QStringLiteral("--all-trials")));
            v.set_mode(QStringLiteral("eval"));
            v.set_pkb_checkout(QString());
            QVERIFY(start_and_wait(v));
        }
        LauncherView again;
        const QString args = again.arguments().join(QLatin1Char(' '));
        for (const char* want : {"--m 64", "--n 32", "--all-trials", "--keep-outputs"}) {
            QVERIFY2(args.contains(QLatin1String(want)), qPrintable(args));
        }
    }
    void form_is_remembered() {
        {
            LauncherView v;
            fake_form(v);
            v.set_ranks(3);
            v.set_pkb_checkout(QString());
            QVERIFY(start_and_wait(v));
        }
        LauncherView again;
        const QString args = again.arguments().join(QLatin1Char(' '));
        QVERIFY2(args.contains(QStringLiteral("--problem 2_allgather --solution ") + kFake +
                               QStringLiteral(" --nproc 3")),
                 qPrintable(args));
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
        fake_form(v, QStringLiteral("hang")); // the fake script waits for SIGTERM on this problem
        QSignalSpy started(&v, &LauncherView::run_started);
        QSignalSpy ended(&v, &LauncherView::process_ended);
        v.start();
        QVERIFY(started.wait(10000));
        QVERIFY(v.running());
        v.cancel();
        QVERIFY(ended.wait(15000));
        QCOMPARE(v.final_status(), QStringLiteral("interrupted"));
        QVERIFY2(v.rank_text(0).startsWith(QStringLiteral("interrupted")), qPrintable(v.rank_text(0)));
    }
    // Review point 21: perf's protocol options and f64 reach pkbw's command line, for perf only, and
    // are remembered.
    void perf_options_and_f64_reach_the_command_line() {
        {
            LauncherView v;
            fake_form(v);
            v.set_mode(QStringLiteral("perf"));
            v.findChild<QComboBox*>(QStringLiteral("launchDtype"))->setCurrentText(QStringLiteral("f64"));
            v.findChild<QCheckBox*>(QStringLiteral("launchNoPkb"))->setChecked(true);
            v.findChild<QSpinBox*>(QStringLiteral("launchWarmup"))->setValue(10);
            v.findChild<QSpinBox*>(QStringLiteral("launchPairs"))->setValue(3);
            v.findChild<QSpinBox*>(QStringLiteral("launchIters"))->setValue(7);
            v.findChild<QSpinBox*>(QStringLiteral("launchLaunches"))->setValue(2);
            const QString args = v.arguments().join(QLatin1Char(' '));
            for (const char* want :
                 {"--dtype f64", "--no-pkb", "--warmup 10", "--pairs 3", "--iters 7", "--launches 2"}) {
                QVERIFY2(args.contains(QLatin1String(want)), qPrintable(args));
            }
            QVERIFY(v.findChild<QSpinBox*>(QStringLiteral("launchPairs"))->isEnabled());
            v.set_mode(QStringLiteral("eval"));
            const QString eval = v.arguments().join(QLatin1Char(' '));
            for (const char* flag : {"--no-pkb", "--warmup", "--pairs", "--iters", "--launches"}) {
                QVERIFY2(!eval.contains(QLatin1String(flag)), qPrintable(eval));
            }
            QVERIFY(!v.findChild<QSpinBox*>(QStringLiteral("launchPairs"))->isEnabled());
            v.set_mode(QStringLiteral("perf"));
            QVERIFY(start_and_wait(v)); // the form is saved when a run starts
        }
        LauncherView restored;
        QCOMPARE(restored.dtype(), QStringLiteral("f64"));
        QCOMPARE(restored.findChild<QSpinBox*>(QStringLiteral("launchIters"))->value(), 7);
        QVERIFY(restored.findChild<QCheckBox*>(QStringLiteral("launchNoPkb"))->isChecked());
        // Left at "pkbw default", an option is pkbw's to choose.
        QSettings().remove(QStringLiteral("launcher"));
        LauncherView fresh;
        fake_form(fresh);
        fresh.set_mode(QStringLiteral("perf"));
        QVERIFY(!fresh.arguments().contains(QStringLiteral("--pairs")));
    }

    // Review point 21: the dtype follows the chosen backend's sample generations (samples/
    // solutions_host_f32_… and solutions_cuda_bf16_…): host with bf16 failed every host sample.
    void dtype_follows_the_backends_samples() {
        LauncherView v;
        auto* backend = v.findChild<QComboBox*>(QStringLiteral("launchBackend"));
        auto* dtype = v.findChild<QComboBox*>(QStringLiteral("launchDtype"));
        backend->setCurrentText(QStringLiteral("host"));
        dtype->setCurrentText(QStringLiteral("bf16"));
        v.set_samples_root(QStringLiteral(PKBW_SOURCE_ROOT "/samples")); // a first start: no dtype chosen
        QCOMPARE(v.sample_dtype(QStringLiteral("host")), QStringLiteral("f32"));
        QCOMPARE(v.sample_dtype(QStringLiteral("cuda")), QStringLiteral("bf16"));
        QCOMPARE(v.dtype(), QStringLiteral("f32"));
        backend->setCurrentIndex(backend->findText(QStringLiteral("cuda")));
        emit backend->activated(backend->currentIndex()); // as the user's choice
        QCOMPARE(v.dtype(), QStringLiteral("bf16"));
        backend->setCurrentIndex(backend->findText(QStringLiteral("host")));
        emit backend->activated(backend->currentIndex());
        QCOMPARE(v.dtype(), QStringLiteral("f32"));
        // A generation folder, or a solution file in one, names the dtype its files are written for.
        dtype->setCurrentText(QStringLiteral("bf16"));
        v.set_solution(QStringLiteral(
            PKBW_SOURCE_ROOT "/samples/solutions_host_f32_none_samples_baseline/1_allreduce_host.cpp"));
        QCOMPARE(v.dtype(), QStringLiteral("f32"));
        v.set_solution(QString());
        v.set_solutions_dir(
            QStringLiteral(PKBW_SOURCE_ROOT "/samples/solutions_cuda_bf16_h200_2_samples_tuned"));
        QCOMPARE(v.dtype(), QStringLiteral("bf16"));
        // A dtype the user picked stays when the samples become known later.
        LauncherView chosen;
        auto* chosen_dtype = chosen.findChild<QComboBox*>(QStringLiteral("launchDtype"));
        chosen_dtype->setCurrentText(QStringLiteral("f16"));
        emit chosen_dtype->activated(chosen_dtype->currentIndex());
        chosen.set_samples_root(QStringLiteral(PKBW_SOURCE_ROOT "/samples"));
        QCOMPARE(chosen.dtype(), QStringLiteral("f16"));
    }

    // Review point 21: after a cancel a bar says where its rank stopped (never "interrupted · 100%"),
    // with its text centred; the finished run is offered by a button, not opened away from the log.
    void interrupted_bars_and_the_finished_run_stay_on_the_launcher() {
        LauncherView v;
        v.handle_line(R"({"event":"run_started","run_id":3,"world_size":2})");
        v.handle_line(R"({"event":"phase","rank":0,"phase":"perf","trial":0})");
        v.handle_line(
            R"({"event":"rank_result","rank":1,"trial":0,"status":"pass","message":"","tensors":[]})");
        v.handle_line(
            R"({"event":"run_finished","run_id":3,"status":"interrupted","exit_code":130,"message":""})");
        QCOMPARE(v.rank_text(0), QStringLiteral("interrupted while timing"));
        QVERIFY(v.rank_bar(0)->value() < v.rank_bar(0)->maximum());
        QCOMPARE(v.rank_text(1), QStringLiteral("interrupted after 1 of 1 trials"));
        QVERIFY(!v.rank_text(1).contains(QLatin1Char('%')));
        QCOMPARE(v.rank_bar(1)->alignment(), Qt::AlignCenter);
        auto* open = v.findChild<QPushButton*>(QStringLiteral("launchOpenRun"));
        QVERIFY(open && !open->isHidden());
        QCOMPARE(open->text(), QStringLiteral("Open run 3"));
        QSignalSpy requested(&v, &LauncherView::open_run_requested);
        open->click();
        QCOMPARE(requested.count(), 1);
        QCOMPARE(requested.first().first().toLongLong(), 3);
    }
    // pkbw --json's own progress events read as pkbw words them without --json, not as raw JSON.
    void progress_events_read_as_pkbw_words_them() {
        LauncherView v;
        v.handle_line(
            R"({"done":1,"event":"progress","rank":null,"seconds":0.2257,"stage":"trial","status":"match","trial":0,"trials":2})");
        v.handle_line(
            R"({"done":2,"event":"progress","rank":1,"seconds":0.5,"stage":"trial","status":"mismatch","trial":1,"trials":2})");
        v.handle_line(R"({"block":1,"blocks":4,"event":"progress","launch":1,"launches":2,"protocol":"pkbw",)"
                      R"("seconds":0.559,"side":"candidate","stage":"perf_block"})");
        v.handle_line(R"({"event":"progress","launch":2,"launches":2,"seconds":1.5,"stage":"perf_launch"})");
        const QString log = v.log_text();
        for (const char* want : {"[trial 1/2] match (0.23 s)", "[trial 2/2] mismatch on rank 1 (0.50 s)",
                                 "[perf launch 1/2] block 1/4 timed: pkbw protocol, candidate (0.56 s)",
                                 "[perf launch 2/2] started (1.50 s)"}) {
            QVERIFY2(log.contains(QString::fromUtf8(want)), qPrintable(log));
        }
        QVERIFY2(!log.contains(QStringLiteral("\"event\"")), qPrintable(log));
    }
    void window_stays_on_the_launch_tab_when_a_run_ends() {
        MainWindow window;
        window.tabs()->setCurrentWidget(window.launcher());
        window.launcher()->handle_line(
            R"({"event":"run_finished","run_id":5,"status":"pass","exit_code":0,"message":""})");
        QCOMPARE(window.tabs()->currentWidget(), window.launcher());
        window.launcher()->findChild<QPushButton*>(QStringLiteral("launchOpenRun"))->click();
        QCOMPARE(window.tabs()->currentWidget(), window.run_view());
    }
};

QTEST_MAIN(TestLauncher)
#include "tst_launcher.moc"
