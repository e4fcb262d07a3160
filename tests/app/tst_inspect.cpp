// Inspecting a run (issue 19): the trace opened on its iterations with a readable ruler, nested
// ranges and a summary by side and rank; aligned sources and logs, found wherever the run went.
// The outputs' heatmaps are in tst_inspect_maps.cpp; the runs list and stores in tst_runs.cpp.
#include "fixtures.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/sha256.h"
#include "pkbw/core/store.h"
#include "pkbw/core/trace_store.h"
#include "runsources.h"
#include "runview.h"
#include "sourceview.h"
#include "timelinewidget.h"
#include "traceview.h"

#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>
#include <fstream>

using namespace pkbw;
using namespace pkbw::app;
using test::add_run;
using test::one_eval_run_store;

namespace {

// Rank 0 of a traced perf run: a 50 ms perf phase and, inside a 1 ms "trace" phase, one reference
// iteration (100-200 us: gemm 110-150 us on stream 7, an NCCL all-gather 140-180 us on stream 8, so
// 10 of its 40 us overlap compute) and one candidate iteration (300-400 us: push_shard 310-330 us).
RankTrace sample_trace() {
    RankTrace t;
    t.rank = 0;
    t.events = {
        test::trace_event(TraceEventKind::EngineRange, "phase", "perf", 0, 50'000'000),
        test::trace_event(TraceEventKind::EngineRange, "phase", "trace", 50'000, 1'000'000),
        test::trace_event(TraceEventKind::EngineRange, "iteration", "reference/0", 100'000, 200'000),
        test::trace_event(TraceEventKind::Kernel, "", "gemm", 110'000, 150'000, 7),
        test::trace_event(TraceEventKind::Kernel, "", "ncclDevKernel_AllGather_RING_LL", 140'000, 180'000, 8),
        test::trace_event(TraceEventKind::EngineRange, "iteration", "candidate/0", 300'000, 400'000),
        test::trace_event(TraceEventKind::Kernel, "", "push_shard", 310'000, 330'000, 7),
    };
    sort_events(t.events);
    return t;
}
} // namespace

class TestInspect : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test")); }

    // --- Trace --------------------------------------------------------------------------------

    void timeline_opens_on_iterations_with_a_readable_ruler() {
        auto data = std::make_shared<const TimelineData>(timeline_from_traces({sample_trace()}));
        QCOMPARE(data->iterations.size(), std::size_t(2));
        // The engine lane: the iterations nest inside the "trace" phase, itself inside "perf".
        const auto lane = std::find_if(data->lanes.begin(), data->lanes.end(),
                                       [](const TimelineLane& l) { return l.name == "engine"; });
        QVERIFY(lane != data->lanes.end());
        QCOMPARE(lane->depths, 3);
        TimelineWidget w;
        w.resize(1100, 400);
        w.set_trace(data);
        QVERIFY(std::fabs(w.window_begin() - 94.0) < 1e-6); // 100-400 us, 2% margins
        QVERIFY(std::fabs(w.window_end() - 406.0) < 1e-6);
        QCOMPARE(w.origin_us(), 100.0);
        auto check_unique = [&](const char* where) {
            const QStringList labels = w.tick_labels();
            QVERIFY2(labels.size() >= 3, where);
            QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), labels.size());
        };
        check_unique("iterations");
        QVERIFY(w.tick_labels().contains(QStringLiteral("0 µs")));
        // Deep in the perf phase, zoomed to 10 ns: still distinct labels.
        w.set_window(100 + 12'345.678, 100 + 12'345.688);
        check_unique("10 ns");
        QVERIFY2(w.tick_labels().first().contains(QStringLiteral("12345")),
                 qPrintable(w.tick_labels().first()));
        w.set_window(0, 50'000);
        check_unique("whole");
        // Zoom to an event: the candidate's kernel.
        w.set_window(94, 406);
        w.select_area(300, 400);
        QVERIFY(w.zoom_to_selection());
        QVERIFY(std::fabs(w.window_begin() - 295) < 1e-6 && std::fabs(w.window_end() - 405) < 1e-6);
    }

    // Double-clicking an event zooms to it: the window becomes the event's span with the quarter-length
    // margins zoom_to_selection gives an event, even while an area is selected (the area is kept); a
    // double click on no event leaves the window alone.
    void double_click_zooms_to_the_event_under_the_cursor() {
        auto data = std::make_shared<const TimelineData>(timeline_from_traces({sample_trace()}));
        TimelineWidget w;
        w.resize(1100, 400);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.set_trace(data);
        w.repaint(); // lays out the lanes
        // The gemm kernel (110-150 us): its lane, row and the pixels where it is hit.
        std::size_t gemm_lane = SIZE_MAX;
        int depth = 0;
        for (std::size_t li = 0; li < data->lanes.size(); ++li) {
            for (const TimelineEvent& e : data->lanes[li].events) {
                if (data->names[e.name] == "gemm") {
                    gemm_lane = li;
                    depth = e.depth;
                }
            }
        }
        QVERIFY(gemm_lane != SIZE_MAX);
        const int row_height = w.lane_height(gemm_lane) / data->lanes[gemm_lane].depths;
        const int y = w.lane_top(gemm_lane) + depth * row_height + row_height / 2;
        int first_x = -1, last_x = -1;
        for (int x = 0; x < w.width(); ++x) {
            std::size_t lane = 0, event = 0;
            if (w.hit(QPointF(x, y), &lane, &event) && lane == gemm_lane &&
                data->names[data->lanes[lane].events[event].name] == "gemm") {
                first_x = first_x < 0 ? x : first_x;
                last_x = x;
            }
        }
        QVERIFY2(last_x - first_x > 20,
                 qPrintable(QStringLiteral("gemm at x %1..%2").arg(first_x).arg(last_x)));
        const QPoint at((first_x + last_x) / 2, y);

        w.select_area(300, 400); // an area is selected: the double click still means the event
        QSignalSpy selected(&w, &TimelineWidget::selection_changed);
        QTest::mouseDClick(&w, Qt::LeftButton, Qt::NoModifier, at);
        QVERIFY(!selected.isEmpty());
        QVERIFY2(selected.last().at(0).toString().contains(QStringLiteral("gemm")),
                 qPrintable(selected.last().at(0).toString()));
        // 110-150 us with a quarter of its 40 us on each side.
        QVERIFY2(std::fabs(w.window_begin() - 100) < 1e-6 && std::fabs(w.window_end() - 160) < 1e-6,
                 qPrintable(QStringLiteral("%1..%2").arg(w.window_begin()).arg(w.window_end())));
        QCOMPARE(w.area(), std::make_pair(300.0, 400.0));

        // Where no event is (the label column), the window stays.
        QTest::mouseDClick(&w, Qt::LeftButton, Qt::NoModifier, QPoint(5, y));
        QVERIFY(std::fabs(w.window_begin() - 100) < 1e-6 && std::fabs(w.window_end() - 160) < 1e-6);
    }

    void summary_by_side_and_rank_with_overlap() {
        const TraceSummary s = summarize_trace({sample_trace()});
        QCOMPARE(s.overlaps.size(), std::size_t(2));
        QCOMPARE(QString::fromStdString(s.overlaps[0].side), QStringLiteral("reference"));
        QCOMPARE(s.overlaps[0].communication_us, 40.0);
        QCOMPARE(s.overlaps[0].overlap_us, 10.0);
        QCOMPARE(s.overlaps[0].overlap_percent, 25.0);
        QCOMPARE(s.overlaps[1].communication_us, 0.0);
        QCOMPARE(s.rows.size(), std::size_t(3));
        QCOMPARE(QString::fromStdString(s.rows[0].side), QStringLiteral("reference"));
        QCOMPARE(s.rows[0].count, qint64(1));
        QCOMPARE(s.rows[0].total_us, 40.0);
        QCOMPARE(s.rows[0].percent_of_iteration, 40.0);
        QCOMPARE(QString::fromStdString(s.rows[2].name), QStringLiteral("push_shard"));
        QCOMPARE(s.rows[2].percent_of_iteration, 20.0);
        // A selection holding the candidate's iteration only.
        const TraceSummary c =
            summarize_trace({sample_trace()}, std::pair<std::int64_t, std::int64_t>{250'000, 450'000});
        QCOMPARE(c.rows.size(), std::size_t(1));
        QCOMPARE(QString::fromStdString(c.rows[0].side), QStringLiteral("candidate"));
    }

    void trace_view_from_the_store_and_why_none() {
        const QString path = test::temp_path(QStringLiteral("traced.db"));
        std::int64_t traced = 0, python = 0, plain = 0;
        {
            Store store = Store::open(path.toStdString());
            RunRecord run;
            run.problem_stem = "2_allgather";
            run.mode = RunMode::Perf;
            run.backend = "host";
            run.command_line = {"pkbw", "perf", "--trace"};
            traced = store.begin_run(run);
            store.finish_run(traced, RunStatus::Pass, 0, "");
            store_run_traces(store, traced, {sample_trace()});
            run.backend = "pkb-cuda";
            run.solution_path = "solutions_cuda/2_allgather.py";
            python = store.begin_run(run);
            store.finish_run(python, RunStatus::Pass, 0, "");
            run.command_line = {"pkbw", "perf"};
            plain = store.begin_run(run);
            store.finish_run(plain, RunStatus::Pass, 0, "");
        }
        TraceView view;
        view.resize(1200, 800);
        view.set_store(path);
        QSignalSpy loaded(&view, &TraceView::loaded);
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), traced)));
        QVERIFY(loaded.wait(5000));
        QCOMPARE(view.summary_table()->rowCount(), 3);
        QCOMPARE(view.overlap_table()->rowCount(), 2);
        QCOMPARE(view.overlap_table()->item(0, 6)->text(), QStringLiteral("25.0"));
        // The GPU busy 110-180 µs of the reference's 100 µs iteration, 20 of the candidate's 100.
        QCOMPARE(view.overlap_table()->item(0, 8)->text(), QStringLiteral("70.0"));
        QCOMPARE(view.overlap_table()->item(1, 8)->text(), QStringLiteral("20.0"));
        QVERIFY(view.overlap_table()->item(0, 8)->toolTip().endsWith(QStringLiteral(": 70.0")));
        QVERIFY(std::fabs(view.timeline()->window_begin() - 94.0) < 1e-6);
        // Ctrl+drag selection -> the summary of the selection.
        view.timeline()->select_area(250, 450);
        QCOMPARE(view.summary_table()->rowCount(), 1);

        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), python)));
        QTRY_VERIFY_WITH_TIMEOUT(view.info_text().contains(QStringLiteral("PKB Python ranks")), 5000);
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), plain)));
        QTRY_VERIFY_WITH_TIMEOUT(view.info_text().contains(QStringLiteral("not run with --trace")), 5000);
    }

    // --- Sources ------------------------------------------------------------------------------

    void sources_aligned_with_line_numbers() {
        SourceView view;
        view.set_sources(QStringLiteral("ref"), QStringLiteral("int a;\nint b;\nint c;"),
                         QStringLiteral("cand"), QStringLiteral("int a;\nfloat b;\nint c;\nint d;"),
                         QStringLiteral("solution.cu(2): error: bad\nsolution.cu:4:5: error: worse\n"));
        const QStringList left = view.shown_left().split(QLatin1Char('\n'));
        const QStringList right = view.shown_right().split(QLatin1Char('\n'));
        QCOMPARE(left.size(), right.size());
        QCOMPARE(left, (QStringList{QStringLiteral("1  int a;"), QStringLiteral("2  int b;"), QString(),
                                    QStringLiteral("3  int c;"), QString()}));
        QCOMPARE(right, (QStringList{QStringLiteral("1  int a;"), QString(), QStringLiteral("2  float b;"),
                                     QStringLiteral("3  int c;"), QStringLiteral("4  int d;")}));
        QCOMPARE(view.diagnostics().size(), 2); // every diagnostic, not the first
        QCOMPARE(view.marked_lines(false), 2);
        QCOMPARE(view.marked_lines(true), 0);
        // The reference's compile log marks the reference's lines, never the candidate's (audit:
        // its line 1 used to tint the candidate's line 1).
        view.set_sources(QStringLiteral("ref"), QStringLiteral("int a;\nint b;\nint c;"),
                         QStringLiteral("cand"), QStringLiteral("int a;\nfloat b;\nint c;\nint d;"),
                         QStringLiteral("solution.cu(2): error: bad\n"), QString(), QString(),
                         QStringLiteral("reference.cu:3:1: warning: unused\n"));
        QCOMPARE(view.diagnostics().size(), 2);
        QCOMPARE(view.marked_lines(false), 1);
        QCOMPARE(view.marked_lines(true), 1);
        QVERIFY(view.diagnostics().at(1).reference && view.diagnostics().at(1).line == 3);
        // A missing candidate: no diff against an empty text.
        view.set_sources(QStringLiteral("ref"), QStringLiteral("int a;\n"), QString(), QString(), QString(),
                         QString(), QStringLiteral("sol.cu: not found"));
        QCOMPARE(view.deleted_lines(), 0);
        QCOMPARE(view.shown_right(), QStringLiteral("sol.cu: not found"));
    }

    void run_sources_follow_the_run_not_the_gui() {
        const QString root = test::temp_path(QStringLiteral("moved"));
        const std::filesystem::path dir = root.toStdString();
        std::filesystem::create_directories(dir / "runs" / "run_1");
        std::filesystem::create_directories(dir / "samples");
        std::ofstream(dir / "ref.py") << "def reference():\n    pass\n";
        std::ofstream(dir / "samples" / "sol.cu") << "__global__ void k() {}\n";
        std::ofstream(dir / "runs" / "run_1" / "rank_1.log") << "rank one\n";
        std::ofstream(dir / "runs" / "run_1" / "rank_0.log") << "rank zero\n";
        std::ofstream(dir / "runs" / "run_1" / "compile_candidate.log")
            << "sol.cu(1): error: a\nsol.cu(1): error: b\n";
        std::ofstream(dir / "runs" / "run_1" / "config.json")
            << nlohmann::json{{"pkb", {{"reference_file", (dir / "ref.py").string()}}}}.dump();
        RunData data;
        data.run.run_dir = (dir / "runs" / "run_1").string();
        data.run.solution_path = "samples/sol.cu"; // relative: found beside the store, not in the GUI's cwd
        data.run.solution_sha256 = sha256_hex("something else");
        const RunSources s = load_run_sources(data, dir / "runs.db", {});
        QVERIFY2(s.reference.found(), s.reference.error.c_str());
        QVERIFY(s.reference.text.find("def reference") != std::string::npos);
        QVERIFY2(s.candidate.found(), s.candidate.error.c_str());
        QVERIFY(s.candidate.note.find("edited since the run") != std::string::npos);
        QCOMPARE(s.logs.size(), std::size_t(3));
        QCOMPARE(QString::fromStdString(s.logs[0].name), QStringLiteral("compile_candidate.log"));
        QCOMPARE(QString::fromStdString(s.logs[1].name), QStringLiteral("rank_0.log"));
        QCOMPARE(QString::fromStdString(s.logs[2].name), QStringLiteral("rank_1.log"));
    }

    // A recorded run's archived source is what the Sources tab shows, even when the file is gone.
    void archived_source_is_shown_after_the_file_is_gone() {
        const QString root = test::temp_path(QStringLiteral("archived"));
        const std::filesystem::path dir = root.toStdString();
        std::filesystem::create_directories(dir / "runs" / "run_1");
        const std::filesystem::path solution = dir / "candidate.cu";
        std::ofstream(solution) << "// the code that ran\n";
        std::int64_t id = 0;
        {
            Store store = Store::open((dir / "runs.db").string());
            RunRecord run;
            run.problem_stem = "1_allreduce";
            run.backend = "host";
            run.solution_path = solution.string();
            run.run_dir = (dir / "runs" / "run_1").string();
            id = store.begin_run(run);
            QVERIFY(!archive_file(store, id, file_role::kCandidateSource, solution).empty());
        }
        std::ofstream(solution) << "// edited after the run\n";
        RunData data;
        data.from_store = true; // run `id` of that store (a run folder's number is never looked up)
        data.run.id = id;
        data.run.solution_path = solution.string();
        data.run.run_dir = (dir / "runs" / "run_1").string();
        const RunSources s = load_run_sources(data, dir / "runs.db", {});
        QVERIFY2(s.candidate.found(), s.candidate.error.c_str());
        QVERIFY(s.candidate.text.find("the code that ran") != std::string::npos);
        QVERIFY(s.candidate.note.find("archived in the store") != std::string::npos);
    }

    // An imported PKB run records its outputs per side (outputs_reference / outputs_candidate, .pt
    // files in PKB's layout): the heatmaps and the tolerance explorer find them there.
    void imported_outputs_are_found_by_side() {
        RunData data;
        data.run.run_dir = "/nonexistent/run";
        data.artifacts.push_back({0, 1, 1, 0, "outputs_reference", "/logs/reference/trial_1/rank_0.pt"});
        data.artifacts.push_back({0, 1, 1, 0, "outputs_candidate", "/logs/cuda/trial_1/rank_0.pt"});
        QCOMPARE(QString::fromStdString(output_path(data, 1, 0, Side::Reference).string()),
                 QStringLiteral("/logs/reference/trial_1/rank_0.pt"));
        QCOMPARE(QString::fromStdString(output_path(data, 1, 0, Side::Candidate).string()),
                 QStringLiteral("/logs/cuda/trial_1/rank_0.pt"));
        // A trial without an artifact falls back to the native layout under the run folder.
        QCOMPARE(QString::fromStdString(output_path(data, 0, 0, Side::Candidate).string()),
                 QStringLiteral("/nonexistent/run/outputs/trial_0/rank_0_candidate.safetensors"));
    }

    // Review defect 10: an imported PKB run whose .pt files are gone is told so, never given pkbw's
    // --keep-outputs advice (PKB made those outputs, not pkbw); a native run's recorded outputs that
    // are gone name the file.
    void missing_outputs_hint_names_the_cause() {
        RunData imported;
        imported.run.backend = "pkb-cuda";
        imported.run.command_line = {"pkbw", "import-pkb", "/logs"};
        imported.artifacts.push_back(
            {0, 1, 0, 0, "outputs_reference", "/gone/logs/reference/trial_0/rank_0.pt"});
        QString text = no_outputs_text(imported);
        QVERIFY2(text.contains(QStringLiteral("import-pkb")) &&
                     text.contains(QStringLiteral("/gone/logs/reference/trial_0/rank_0.pt")),
                 qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("--keep-outputs")), qPrintable(text));
        imported.artifacts.clear();
        text = no_outputs_text(imported);
        QVERIFY2(text.contains(QStringLiteral("held no .pt outputs")), qPrintable(text));
        QVERIFY(!text.contains(QStringLiteral("--keep-outputs")));

        RunData native;
        native.run.backend = "cuda";
        native.artifacts.push_back(
            {0, 2, 1, 0, "outputs_candidate", "/gone/runs/r/outputs/trial_1/rank_0_candidate.safetensors"});
        text = no_outputs_text(native);
        QVERIFY2(text.contains(QStringLiteral("rank_0_candidate.safetensors")) &&
                     text.contains(QStringLiteral("run folder")),
                 qPrintable(text));
        native.artifacts.clear();
        QVERIFY(no_outputs_text(native).contains(QStringLiteral("--keep-outputs")));

        // The Run tab's tolerance explorer says it for an imported run from a store.
        const QString path = test::temp_path(QStringLiteral("imported_gone.db"));
        std::int64_t id = 0;
        {
            Store store = Store::open(path.toStdString());
            id = add_run(store, "2_allgather", "solutions_cuda_bf16_none_openai_gpt-5.5", RunMode::Eval,
                         RunStatus::Mismatch, std::nullopt, 30, "pkb-cuda");
            store.add_artifact({0, id, 0, 0, "outputs_reference", "/gone/logs/reference/trial_0/rank_0.pt"});
            store.add_artifact({0, id, 0, 0, "outputs_candidate", "/gone/logs/cuda/trial_0/rank_0.pt"});
        }
        RunView view;
        view.set_store(path);
        QSignalSpy rescored(&view, &RunView::rescore_ready);
        view.open_run(id);
        QTRY_VERIFY_WITH_TIMEOUT(rescored.count() > 0, 5000);
        QVERIFY2(view.rescore_text().contains(QStringLiteral("import-pkb")), qPrintable(view.rescore_text()));
        QVERIFY2(!view.rescore_text().contains(QStringLiteral("--keep-outputs")),
                 qPrintable(view.rescore_text()));
    }
};

QTEST_MAIN(TestInspect)
#include "tst_inspect.moc"
