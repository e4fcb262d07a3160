// The Sweeps tab on real host-backend sweeps made here with `pkbw sweep` (problems 1-4 x the sample
// generation and a copy with a wrong and a non-compiling solution): its table holds the numbers of
// `pkbw show --sweep ID --json`, the failing pairs open their runs, a perf sweep draws its fast_p
// curves, and a sweep still running is re-read until it ends.
#include "fixtures.h"
#include "generationsview.h"
#include "heatmapview.h"
#include "mainwindow.h"
#include "pkbw/core/sweep_table.h"
#include "qtconvert.h"
#include "runview.h"
#include "sourceview.h"
#include "sweepsview.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProgressBar>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QtTest>
#include <qcustomplot.h>

using namespace pkbw;
using namespace pkbw::app;

namespace {

const QString kBaseline = QStringLiteral("solutions_host_f32_none_samples_baseline");
const QString kBroken = QStringLiteral("solutions_host_f32_none_samples_broken");

QString pkbw_program() {
    return QStringLiteral(PKBW_BINARY_DIR "/bin/pkbw");
}

QString run_pkbw(const QStringList& args, int* code) {
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(pkbw_program(), args);
    p.waitForFinished(240000);
    *code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    return QString::fromUtf8(p.readAll());
}

QString cell(const QTableWidget* t, int row, int column) {
    return t->item(row, column) ? t->item(row, column)->text() : QString();
}

int column_of(const QTableWidget* t, const QString& header) {
    for (int c = 0; c < t->columnCount(); ++c) {
        if (t->horizontalHeaderItem(c)->text() == header) {
            return c;
        }
    }
    return -1;
}

} // namespace

class TestSweeps : public QObject {
    Q_OBJECT
    QString dir_, store_;
    qint64 eval_sweep_ = 0, perf_sweep_ = 0;

    QJsonObject show_json(qint64 id) {
        int code = 0;
        const QString out = run_pkbw({QStringLiteral("show"), QStringLiteral("--sweep"), QString::number(id),
                                      QStringLiteral("--json"), QStringLiteral("--store"), store_},
                                     &code);
        if (code != 0) {
            qWarning("%s", qPrintable(out));
        }
        return QJsonDocument::fromJson(out.toUtf8()).object();
    }

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test"));
        if (!QFile::exists(pkbw_program())) {
            QSKIP("pkbw is not built (ninja pkbw pkbw-rank pkbw-candidate)");
        }
        dir_ = test::temp_path(QStringLiteral("sweeps"));
        QDir(dir_).removeRecursively();
        QDir().mkpath(dir_ + QLatin1Char('/') + kBroken);
        store_ = dir_ + QStringLiteral("/runs.db");
        const QString samples = QStringLiteral(PKBW_SOURCE_ROOT "/samples/") + kBaseline;
        // The copy: 1 sums with the wrong sign (mismatch), 3 does not compile, 2 and 4 as they are.
        for (const QString& name : QDir(samples).entryList(QDir::Files)) {
            QFile in(samples + QLatin1Char('/') + name);
            QVERIFY(in.open(QIODevice::ReadOnly));
            QByteArray text = in.readAll();
            if (name.startsWith(QLatin1String("1_"))) {
                QVERIFY(text.contains("+="));
                text.replace("+=", "-=");
            } else if (name.startsWith(QLatin1String("3_"))) {
                text += "this is not C++;\n";
            }
            QFile out(dir_ + QLatin1Char('/') + kBroken + QLatin1Char('/') + name);
            QVERIFY(out.open(QIODevice::WriteOnly));
            out.write(text);
        }
        qputenv("PKBW_CACHE_DIR", (dir_ + QStringLiteral("/cache")).toUtf8());
        int code = 0;
        const QStringList common{QStringLiteral("--solutions-dir"), samples,
                                 QStringLiteral("--solutions-dir"), dir_ + QLatin1Char('/') + kBroken,
                                 QStringLiteral("--nproc"),         QStringLiteral("2"),
                                 QStringLiteral("--backend"),       QStringLiteral("host"),
                                 QStringLiteral("--jobs"),          QStringLiteral("2"),
                                 QStringLiteral("--store"),         store_};
        QString out = run_pkbw(
            QStringList{QStringLiteral("sweep"), QStringLiteral("--problems"), QStringLiteral("1-4")} +
                common +
                QStringList{QStringLiteral("--"), QStringLiteral("--trials"), QStringLiteral("1"),
                            QStringLiteral("--m"), QStringLiteral("256"), QStringLiteral("--n"),
                            QStringLiteral("256")},
            &code);
        QVERIFY2(code == 0, qPrintable(out));
        out = run_pkbw(QStringList{QStringLiteral("sweep"), QStringLiteral("--problems"),
                                   QStringLiteral("1-2"), QStringLiteral("--mode"), QStringLiteral("perf")} +
                           common +
                           QStringList{QStringLiteral("--"), QStringLiteral("--trials"), QStringLiteral("1"),
                                       QStringLiteral("--no-pkb"), QStringLiteral("--pairs"),
                                       QStringLiteral("2"), QStringLiteral("--iters"), QStringLiteral("10"),
                                       QStringLiteral("--warmup"), QStringLiteral("2")},
                       &code);
        QVERIFY2(code == 0, qPrintable(out));
        const Store store = Store::open_read_only(store_.toStdString());
        for (const auto& s : list_sweeps(store)) {
            (s.mode == "perf" ? perf_sweep_ : eval_sweep_) = s.id;
        }
        QVERIFY(eval_sweep_ > 0 && perf_sweep_ > 0);
    }

    void table_has_the_numbers_of_pkbw_show() {
        SweepsView view;
        QSignalSpy loaded(&view, &SweepsView::loaded);
        view.set_store(store_);
        QVERIFY(loaded.wait(10000));
        view.show_sweep(eval_sweep_);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(view.sweep_id(), eval_sweep_);
        const QTableWidget* t = view.generation_table();
        QCOMPARE(t->rowCount(), 2);
        const QJsonObject json = show_json(eval_sweep_);
        const QJsonArray generations = json[QStringLiteral("generations")].toArray();
        QCOMPARE(generations.size(), 2);
        for (int row = 0; row < 2; ++row) {
            const QJsonObject g = generations[row].toObject();
            QCOMPARE(cell(t, row, 0), g[QStringLiteral("generation")].toString());
            QCOMPARE(cell(t, row, column_of(t, QStringLiteral("attempted"))),
                     QString::number(g[QStringLiteral("attempted")].toInt()));
            QCOMPARE(cell(t, row, column_of(t, QStringLiteral("correct"))),
                     QString::number(g[QStringLiteral("correct")].toInt()));
            QCOMPARE(cell(t, row, column_of(t, QStringLiteral("fast_0"))),
                     QString::number(g[QStringLiteral("fast_p")].toObject()[QStringLiteral("0")].toDouble(),
                                     'f', 2));
        }
        // And the numbers themselves: the samples all pass; the copy fails 1 (wrong) and 3 (compile).
        const int baseline = cell(t, 0, 0) == kBaseline ? 0 : 1, broken = 1 - baseline;
        QCOMPARE(cell(t, baseline, column_of(t, QStringLiteral("correct"))), QStringLiteral("4"));
        QCOMPARE(cell(t, baseline, column_of(t, QStringLiteral("failures"))), QStringLiteral("-"));
        QCOMPARE(cell(t, broken, column_of(t, QStringLiteral("attempted"))), QStringLiteral("4"));
        QCOMPARE(cell(t, broken, column_of(t, QStringLiteral("correct"))), QStringLiteral("2"));
        QCOMPARE(cell(t, broken, column_of(t, QStringLiteral("fast_0"))), QStringLiteral("0.50"));
        QCOMPARE(cell(t, broken, column_of(t, QStringLiteral("failures"))),
                 QStringLiteral("compile_error 1, mismatch 1"));
        QCOMPARE(cell(t, broken, column_of(t, QStringLiteral("faster"))), QStringLiteral("-")); // eval
        QCOMPARE(view.progress()->value(), 8);
        QCOMPARE(view.progress()->maximum(), 8);
        QVERIFY(!view.refreshing()); // a finished sweep is not re-read
    }

    void failing_pairs_open_their_runs() {
        MainWindow window;
        QSignalSpy opened(&window, &MainWindow::store_opened);
        window.open_store(store_);
        QVERIFY(opened.wait(10000));
        SweepsView* view = window.sweeps_view();
        QSignalSpy loaded(view, &SweepsView::loaded);
        view->show_sweep(eval_sweep_);
        QVERIFY(loaded.wait(10000));
        const QTableWidget* failing = view->failing_table();
        QCOMPARE(failing->rowCount(), 2);
        // An eval sweep: no fast_p plot (a p axis for one dot at 0), a sentence instead (review point 22).
        QVERIFY(view->fast_p_plot()->isHidden());
        QVERIFY(!view->eval_note()->isHidden());
        // On a laptop's screen the failing pairs take the width the plot would have had (the sentence
        // beside them used to take half and leave the table a sliver: the H200 sweep of 82 pairs).
        window.resize(1366, 768);
        window.show();
        window.tabs()->setCurrentWidget(view);
        QTRY_VERIFY(failing->isVisible());
        QTRY_VERIFY2(
            failing->width() > view->width() * 3 / 4,
            qPrintable(QStringLiteral("failing pairs %1 px of %2").arg(failing->width()).arg(view->width())));
        int mismatch_row = -1;
        // The generation's short name in the cell (a PKB folder such as
        // solutions_cuda_bf16_h100_8_anthropic_claude-opus-4-7 reads anthropic/claude-opus-4-7), the folder
        // in its tooltip.
        const QString short_broken =
            to_qstring(short_generation_label(parse_generation_label(kBroken.toStdString())));
        QCOMPARE(to_qstring(short_generation_label(
                     parse_generation_label("solutions_cuda_bf16_h100_8_anthropic_claude-opus-4-7"))),
                 QStringLiteral("anthropic/claude-opus-4-7"));
        for (int row = 0; row < failing->rowCount(); ++row) {
            QCOMPARE(cell(failing, row, 0), short_broken);
            QCOMPARE(failing->item(row, 0)->toolTip(), kBroken);
            if (cell(failing, row, 2) == QLatin1String("mismatch")) {
                mismatch_row = row;
                QCOMPARE(cell(failing, row, 1), QStringLiteral("1_allreduce"));
            } else {
                QCOMPARE(cell(failing, row, 2), QStringLiteral("compile_error"));
                QCOMPARE(cell(failing, row, 1), QStringLiteral("3_broadcast"));
            }
        }
        QVERIFY(mismatch_row >= 0);
        const qint64 run_id = cell(failing, mismatch_row, 3).toLongLong();
        const Store store = Store::open_read_only(store_.toStdString());
        QCOMPARE(std::string(to_string(store.get_run(run_id)->status)), std::string("mismatch"));
        QSignalSpy run_loaded(window.run_view(), &RunView::run_loaded);
        view->activate_failing(mismatch_row);
        QVERIFY(run_loaded.wait(10000));
        QCOMPARE(window.run_view()->data()->run.id, run_id);
        QCOMPARE(window.tabs()->currentWidget(), window.run_view());
    }

    void perf_sweep_draws_fast_p_curves() {
        SweepsView view;
        QSignalSpy loaded(&view, &SweepsView::loaded);
        view.set_store(store_);
        QVERIFY(loaded.wait(10000));
        view.show_sweep(perf_sweep_);
        QVERIFY(loaded.wait(10000));
        const SweepTable& table = view.table();
        QCOMPARE(static_cast<int>(table.generations.size()), 2);
        QCOMPARE(view.fast_p_plot()->graphCount(), 2);
        QVERIFY(!view.fast_p_plot()->isHidden());
        QVERIFY(view.eval_note()->isHidden());
        // Review point 22: the legend stands beside the plot, in the plot's layout, not inset over the
        // curves, and shows once there are curves.
        QCustomPlot* plot = view.fast_p_plot();
        QVERIFY(plot->legend->visible());
        QVERIFY(plot->plotLayout()->hasElement(1, 1) && plot->plotLayout()->element(1, 1) == plot->legend);
        QCOMPARE(plot->axisRect()->insetLayout()->elementCount(), 0);
        const QJsonObject json = show_json(perf_sweep_);
        for (const QJsonValue& value : json[QStringLiteral("generations")].toArray()) {
            const QJsonObject g = value.toObject();
            int index = -1;
            for (int i = 0; i < 2; ++i) {
                if (table.generations[static_cast<std::size_t>(i)].label ==
                    g[QStringLiteral("generation")].toString().toStdString()) {
                    index = i;
                }
            }
            QVERIFY(index >= 0);
            const auto& row = table.generations[static_cast<std::size_t>(index)];
            QCOMPARE(static_cast<int>(row.speedups.size()), g[QStringLiteral("speedups")].toArray().size());
            QCOMPARE(static_cast<int>(row.fast_bounds.size()),
                     g[QStringLiteral("fast_bounds")].toArray().size());
            QCOMPARE(row.faster, g[QStringLiteral("faster")].toInt());
            // The curve: fast_0 at p = 0, then one step per speedup, down to zero at its end.
            const QCPGraph* graph = view.fast_p_plot()->graph(index);
            QCOMPARE(graph->name(), g[QStringLiteral("generation")].toString());
            QCOMPARE(graph->data()->size(), static_cast<int>(sweep_fast_p_steps(row, 2).size()));
            QCOMPARE(graph->data()->at(0)->value,
                     g[QStringLiteral("fast_p")].toObject()[QStringLiteral("0")].toDouble());
            QCOMPARE((graph->data()->constEnd() - 1)->value, 0.0);
        }
        // Every timed pair carries the verdict and interval its run stored, in the view and the JSON.
        int timed = 0;
        for (const QJsonValue& value : json[QStringLiteral("pairs")].toArray()) {
            const QJsonObject p = value.toObject();
            if (p[QStringLiteral("speedup")].isNull()) {
                continue;
            }
            ++timed;
            QVERIFY(QStringList({QStringLiteral("faster"), QStringLiteral("slower"), QStringLiteral("same"),
                                 QStringLiteral("ambiguous")})
                        .contains(p[QStringLiteral("verdict")].toString()));
            QVERIFY(p[QStringLiteral("ci_low")].toDouble() <= p[QStringLiteral("speedup")].toDouble());
        }
        QVERIFY(timed > 0);
        for (const SweepPairView& v : table.pairs) {
            QCOMPARE(v.speedup.has_value(), v.verdict.has_value());
            QCOMPARE(v.speedup.has_value(), v.ci_low.has_value());
        }
        const auto& broken = table.generations[table.generations[0].label == kBroken.toStdString() ? 0 : 1];
        QCOMPARE(broken.correct, 1); // 1 is wrong, 2 passes
        QCOMPARE(broken.failures.at("mismatch"), 1);
    }

    void fast_p_steps_follow_the_speedups() {
        SweepGenerationRow row;
        row.attempted = 4;
        row.correct = 3;
        row.speedups = {0.5, 2.0, 1.25};
        row.fast_bounds = {0.5, 2.0, 1.25}; // stored without intervals: the speedups themselves
        const auto steps = sweep_fast_p_steps(row, 3);
        QCOMPARE(static_cast<int>(steps.size()), 6);
        QCOMPARE(steps[0], std::make_pair(0.0, 0.75));
        QCOMPARE(steps[1], std::make_pair(0.0, 0.75));  // just above 0: the three with a bound
        QCOMPARE(steps[2], std::make_pair(0.5, 0.5));   // 1.25 and 2.0 are above 0.5
        QCOMPARE(steps[3], std::make_pair(1.25, 0.25)); // 2.0 alone
        QCOMPARE(steps[4], std::make_pair(2.0, 0.0));
        QCOMPARE(steps[5], std::make_pair(3.0, 0.0));
        QVERIFY(sweep_fast_p_steps(SweepGenerationRow{}, 3).empty());
    }

    // With stored intervals the curve steps at each pair's interval low end (core's rule): 1.3x with
    // an interval from 0.98 leaves fast_p at 0.98, before p = 1; 1.3x from 1.02 counts up to 1.02.
    void fast_p_steps_follow_the_intervals() {
        SweepGenerationRow row;
        row.attempted = 2;
        row.correct = 2;
        row.timed = 2;
        row.speedups = {1.3, 1.3};
        row.fast_bounds = {0.98, 1.02};
        QCOMPARE(row.fast_p(1), 0.5);
        const auto steps = sweep_fast_p_steps(row, 2);
        QCOMPARE(static_cast<int>(steps.size()), 5);
        QCOMPARE(steps[0], std::make_pair(0.0, 1.0));
        QCOMPARE(steps[1], std::make_pair(0.0, 1.0));
        QCOMPARE(steps[2], std::make_pair(0.98, 0.5));
        QCOMPARE(steps[3], std::make_pair(1.02, 0.0));
        QCOMPARE(steps[4], std::make_pair(2.0, 0.0));
        const QStringList cells = sweep_row_cells(row, true, default_fast_p());
        QCOMPARE(cells[4], QStringLiteral("1.00")); // fast_0
        QCOMPARE(cells[5], QStringLiteral("0.50")); // fast_1
    }

    void running_sweep_is_re_read_until_it_ends() {
        // A second sweep of two pairs, still running: its pairs name runs of the first sweep, and
        // are recorded done one at a time while the view is open, as pkbw sweep does.
        std::vector<SweepPair> pairs;
        std::vector<std::int64_t> runs;
        {
            const Store store = Store::open_read_only(store_.toStdString());
            for (const auto& p : sweep_pairs(store, eval_sweep_)) {
                if (p.generation_label == kBaseline.toStdString() && pairs.size() < 2) {
                    SweepPair pending = p;
                    pending.state = "pending";
                    pending.run_id.reset();
                    pending.position = static_cast<int>(pairs.size());
                    pairs.push_back(pending);
                    runs.push_back(*p.run_id);
                }
            }
        }
        QCOMPARE(static_cast<int>(pairs.size()), 2);
        std::int64_t id = 0;
        {
            Store store = Store::open(store_.toStdString());
            SweepRecord s;
            s.name = "still-running";
            s.backend = "host";
            s.world_size = 2;
            id = create_sweep(store, s, pairs);
        }
        SweepsView view;
        view.set_refresh_interval(100);
        QSignalSpy loaded(&view, &SweepsView::loaded);
        view.set_store(store_);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(view.sweep_id(), id); // the newest sweep is shown first
        QCOMPARE(view.progress()->value(), 0);
        QCOMPARE(view.progress()->maximum(), 2);
        QVERIFY(view.refreshing());
        {
            Store store = Store::open(store_.toStdString());
            SweepPair done = pairs[0];
            done.state = "done";
            done.run_id = runs[0];
            record_sweep_pair(store, id, done);
        }
        QTRY_COMPARE_WITH_TIMEOUT(view.progress()->value(), 1, 10000);
        QCOMPARE(view.table().generations.at(0).correct, 1);
        {
            Store store = Store::open(store_.toStdString());
            SweepPair done = pairs[1];
            done.state = "done";
            done.run_id = runs[1];
            record_sweep_pair(store, id, done);
            set_sweep_status(store, id, "done");
        }
        QTRY_COMPARE_WITH_TIMEOUT(view.progress()->value(), 2, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(!view.refreshing(), 10000);
        QVERIFY(view.failing_table()->rowCount() == 0);
    }
    // Issue 19's "store moved to another directory": a real host run (a candidate off by 0.5, its
    // outputs kept), its store folder moved elsewhere and the candidate file deleted. The run still
    // opens with its heatmaps and tolerance explorer (run folder found relative to the store) and
    // its Sources tab shows the archived candidate.
    void moved_store_keeps_outputs_tolerances_and_sources() {
        const QString from = test::temp_path(QStringLiteral("moved_from"));
        const QString to = test::temp_path(QStringLiteral("moved_to"));
        QVERIFY(QDir().mkpath(from) && QDir().mkpath(to));
        QFile sample(QStringLiteral(PKBW_SOURCE_ROOT "/samples/") + kBaseline +
                     QStringLiteral("/1_allreduce_host.cpp"));
        QVERIFY(sample.open(QIODevice::ReadOnly));
        QString code = QString::fromUtf8(sample.readAll());
        QVERIFY(code.contains(QStringLiteral("dst[i] = sum;")));
        code.replace(QStringLiteral("dst[i] = sum;"), QStringLiteral("dst[i] = sum + 0.5f;"));
        const QString candidate = from + QStringLiteral("/candidate.cpp");
        QFile out(candidate);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(code.toUtf8());
        out.close();
        int rc = 0;
        const QString log = run_pkbw({QStringLiteral("eval"),
                                      QStringLiteral("--problem"),
                                      QStringLiteral("1"),
                                      QStringLiteral("--solution"),
                                      candidate,
                                      QStringLiteral("--backend"),
                                      QStringLiteral("host"),
                                      QStringLiteral("--nproc"),
                                      QStringLiteral("2"),
                                      QStringLiteral("--dtype"),
                                      QStringLiteral("f32"),
                                      QStringLiteral("--m"),
                                      QStringLiteral("32"),
                                      QStringLiteral("--n"),
                                      QStringLiteral("32"),
                                      QStringLiteral("--trials"),
                                      QStringLiteral("1"),
                                      QStringLiteral("--keep-outputs"),
                                      QStringLiteral("--store"),
                                      from + QStringLiteral("/store/runs.db")},
                                     &rc);
        QVERIFY2(rc == 1 && log.contains(QStringLiteral("mismatch")), qPrintable(log));
        QVERIFY(QDir().rename(from + QStringLiteral("/store"), to + QStringLiteral("/elsewhere")));
        QVERIFY(QFile::remove(candidate));
        const QString moved = to + QStringLiteral("/elsewhere/runs.db");

        RunView view;
        view.set_store(moved);
        QSignalSpy heatmaps(&view, &RunView::heatmaps_ready);
        QSignalSpy rescored(&view, &RunView::rescore_ready);
        view.open_run(1);
        QVERIFY(heatmaps.wait(20000) || heatmaps.count() > 0);
        QVERIFY2(view.heatmaps()->values_shown(), qPrintable(view.heatmaps()->summary_text()));
        QVERIFY2(view.heatmaps()->summary_text().contains(QStringLiteral("max |diff| 0.5")),
                 qPrintable(view.heatmaps()->summary_text()));
        QVERIFY(rescored.count() > 0 || rescored.wait(20000));
        QVERIFY2(view.rescore_text().contains(QStringLiteral("0 of 2 rank-trials pass")),
                 qPrintable(view.rescore_text()));

        SourceView sources;
        sources.set_store(moved);
        QSignalSpy loaded(&sources, &SourceView::loaded);
        sources.set_data(view.data());
        QVERIFY(loaded.wait(20000));
        QVERIFY2(sources.right_text() == code, qPrintable(sources.right_title()));
        QVERIFY2(sources.right_title().contains(QStringLiteral("archived in the store")),
                 qPrintable(sources.right_title()));
        QVERIFY(sources.left_text().contains(QStringLiteral("pkbw_solution")));
    }
};

QTEST_MAIN(TestSweeps)
#include "tst_sweeps.moc"
