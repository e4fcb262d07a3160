// Defects of the second GUI review (2026-12-02) beyond the trust of the figures (tst_trust): the
// launcher's generation folder starts native runs, heatmaps keep the whole tensor in a short window
// and reset their view, the trace's overlap counts a peer-memory kernel as communication, its events
// show their launch configuration, its summary rows select and zoom, a search outlines matches, idle
// time and the waiting for peers are accounted per rank.
#include "fixtures.h"
#include "heatmapview.h"
#include "launcherview.h"
#include "pkbw/core/trace_store.h"
#include "runsbrowser.h"
#include "runsmodel.h"
#include "sweepsview.h"
#include "timelinewidget.h"
#include "tracedata.h"
#include "tracesummary.h"
#include "traceview.h"

#include <QLabel>
#include <QProgressBar>
#include <QSettings>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>
#include <qcustomplot.h>

using namespace pkbw;
using namespace pkbw::app;

namespace {

// A 2-rank trace of one candidate iteration each (0-100 µs): a compute kernel and a peer-push kernel
// with an anonymous name (the usual LLM candidate's own communication), rank 1 ending 20 µs later.
std::vector<RankTrace> peer_kernel_traces() {
    std::vector<RankTrace> traces;
    for (int rank = 0; rank < 2; ++rank) {
        RankTrace t;
        t.rank = rank;
        const std::int64_t end = rank == 0 ? 100'000 : 120'000;
        TraceEvent gemm = test::trace_event(TraceEventKind::Kernel, "", "void gemm_tile<float>(float*, int)",
                                            10'000, 50'000, 7);
        gemm.grid = {2, 64, 1};
        gemm.block = {384, 1, 1};
        gemm.registers = 168;
        gemm.shared_memory = 213268;
        gemm.correlation_id = 42;
        t.events = {test::trace_event(TraceEventKind::EngineRange, "iteration", "candidate/0", 0, end), gemm,
                    test::trace_event(TraceEventKind::Kernel, "",
                                      "(anonymous namespace)::push_shards(float*)", 40'000, 80'000, 8)};
        sort_events(t.events);
        traces.push_back(std::move(t));
    }
    return traces;
}

const SideOverlap* overlap_of(const TraceSummary& s, int rank) {
    for (const auto& o : s.overlaps) {
        if (o.rank == rank) {
            return &o;
        }
    }
    return nullptr;
}

} // namespace

class TestReview : public QObject {
    Q_OBJECT
    QString trace_store_;
    std::int64_t trace_run_ = 0;

private slots:
    void initTestCase() {
        QSettings().remove(QStringLiteral("launcher"));
        trace_store_ = test::temp_path(QStringLiteral("review-trace.db"));
        QFile::remove(trace_store_);
        Store store = Store::open(trace_store_.toStdString());
        trace_run_ = test::add_perf_run(store, "1_allreduce", "solutions_cuda_bf16_h200_x_y", 2.0, 1.0);
        store_run_traces(store, trace_run_, peer_kernel_traces());
    }

    // #2: a generation folder alone gives pkbw the --solution NAME its files carry.
    void launcher_generation_folder_passes_a_solution_name() {
        LauncherView v;
        v.set_problem(QStringLiteral("1_allreduce"));
        v.set_solutions_dir(QStringLiteral("/x/solutions_host_f32_none_samples_baseline"));
        const QString args = v.arguments_for(QStringLiteral("1_allreduce")).join(QLatin1Char(' '));
        QVERIFY2(args.contains(QStringLiteral(
                     "--solution host --solutions-dir /x/solutions_host_f32_none_samples_baseline")),
                 qPrintable(args));
        v.set_solutions_dir(QStringLiteral("/x/my_folder")); // no backend in the name: the form's
        v.set_backend(QStringLiteral("cuda"));
        QVERIFY(v.arguments_for(QStringLiteral("1_allreduce"))
                    .join(QLatin1Char(' '))
                    .contains(QStringLiteral("--solution cuda --solutions-dir")));
        v.set_solution(QStringLiteral("/x/my_folder/1_allreduce_host.cpp")); // an explicit file wins
        QVERIFY(!v.arguments_for(QStringLiteral("1_allreduce"))
                     .join(QLatin1Char(' '))
                     .contains(QStringLiteral("--solution cuda")));
    }

    // #2, for real: a comma list over the sample folder runs every problem natively with pkbw.
    void launcher_generation_folder_runs_a_comma_list() {
        LauncherView v;
        v.set_executable(QStringLiteral(PKBW_BINARY_DIR "/bin/pkbw"));
        v.set_store(test::temp_path(QStringLiteral("review-launch.db")));
        // The problems the form accepts (pkbw's own list arrives asynchronously; not what is tested).
        v.set_problem_list(
            {QStringLiteral("1_allreduce"), QStringLiteral("2_allgather"), QStringLiteral("3_broadcast")});
        v.set_problem(QStringLiteral("1,3"));
        v.set_solutions_dir(
            QStringLiteral(PKBW_SOURCE_ROOT "/samples/solutions_host_f32_none_samples_baseline"));
        v.set_backend(QStringLiteral("host"));
        v.set_mode(QStringLiteral("eval"));
        v.set_ranks(2);
        v.set_trials(1);
        QSignalSpy finished(&v, &LauncherView::run_finished);
        v.start();
        QTRY_VERIFY2_WITH_TIMEOUT(finished.count() == 2 || !v.running(), qPrintable(v.log_text()), 150000);
        QCOMPARE(finished.count(), 2);
        QTRY_VERIFY_WITH_TIMEOUT(!v.running(), 10000);
        QVERIFY2(!v.log_text().contains(QStringLiteral("--solution is required")), qPrintable(v.log_text()));
    }

    // #5 and #14: the whole tensor stays in view when the map area is shorter than wide, a zoom is
    // kept across resizes, and reset_view (Home, double click) shows the whole tensor again.
    void heatmaps_keep_every_row_and_reset() {
        HeatmapView view;
        view.resize(700, 900);
        view.show();
        view.show_set(compute_heatmaps(test::iota_4x4(), test::perturbed_4x4(), 0.01, 0.0));
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCoreApplication::processEvents();
        auto whole_in_view = [&view] {
            for (QCustomPlot* plot : view.plots().mid(0, 4)) {
                if (!plot->isVisible()) {
                    continue;
                }
                const QCPRange y = plot->yAxis->range(), x = plot->xAxis->range();
                if (y.lower > 1e-9 || y.upper < 4 - 1e-9 || x.lower > 1e-9 || x.upper < 4 - 1e-9) {
                    return false;
                }
            }
            return true;
        };
        for (QCustomPlot* plot : view.plots()) {
            plot->replot();
        }
        QVERIFY(whole_in_view());
        view.resize(1600, 420); // a laptop: the map area much wider than tall
        QCoreApplication::processEvents();
        for (QCustomPlot* plot : view.plots()) {
            plot->replot();
        }
        QVERIFY2(whole_in_view(), "rows cropped after the window got shorter than wide");
        // A zoom (the wheel) is the user's view; Home shows the whole tensor again.
        QCustomPlot* first = view.plots().at(0);
        QWheelEvent wheel(QPointF(first->width() / 2.0, first->height() / 2.0),
                          first->mapToGlobal(QPointF(first->width() / 2.0, first->height() / 2.0)), QPoint(),
                          QPoint(0, 480), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QCoreApplication::sendEvent(first, &wheel);
        QVERIFY(view.zoomed());
        QVERIFY(!whole_in_view());
        // A double click on a map (as Home) shows the whole tensor again.
        QTest::mouseDClick(first, Qt::LeftButton, Qt::NoModifier, first->rect().center());
        QCoreApplication::processEvents();
        QVERIFY(!view.zoomed());
        QVERIFY(whole_in_view());
    }

    // #8: a candidate's own peer-memory kernel is communication; idle and waiting are accounted.
    void overlap_counts_peer_kernels_and_idle_time() {
        const auto traces = peer_kernel_traces();
        const TraceSummary s = summarize_trace(traces);
        const SideOverlap* r0 = overlap_of(s, 0);
        QVERIFY(r0);
        QCOMPARE(r0->communication_us, 0.0); // "push_shards" says nothing: computation until marked
        const TraceSummary marked =
            summarize_trace(traces, std::nullopt, {"(anonymous namespace)::push_shards(float*)"});
        const SideOverlap* m0 = overlap_of(marked, 0);
        QCOMPARE(m0->communication_us, 40.0);
        QCOMPARE(m0->compute_us, 40.0);
        QCOMPARE(m0->overlap_us, 10.0);           // 40-50 µs
        QCOMPARE(m0->idle_us, 30.0);              // 0-10 and 80-100 µs
        QCOMPARE(m0->waiting_for_peers_us, 20.0); // rank 1 ended its iteration 20 µs later
        QCOMPARE(overlap_of(marked, 1)->waiting_for_peers_us, 0.0);
        // The tracer marks a kernel it saw given a pointer into a peer's memory (TraceEvent::peer_memory):
        // it counts with no mark of the user's, and its row says why.
        auto seen = traces;
        for (RankTrace& t : seen)
            for (TraceEvent& e : t.events)
                e.peer_memory = e.display_name() == "(anonymous namespace)::push_shards(float*)";
        const TraceSummary by_tracer = summarize_trace(seen);
        QCOMPARE(overlap_of(by_tracer, 0)->communication_us, 40.0);
        QCOMPARE(overlap_of(by_tracer, 0)->overlap_us, 10.0);
        bool peer_row = false;
        for (const TraceSummaryRow& row : by_tracer.rows)
            if (row.name == "(anonymous namespace)::push_shards(float*)") {
                QCOMPARE(row.communication, std::string("touches peer memory"));
                peer_row = true;
            }
        QVERIFY(peer_row);
        TraceEvent pushed = test::trace_event(TraceEventKind::Kernel, "", "push_shards", 0, 1, 7);
        QVERIFY(event_detail(pushed).find("peer memory") == std::string::npos);
        pushed.peer_memory = true;
        QVERIFY(event_detail(pushed).find("touches peer memory") != std::string::npos);
        // Names that say so, peer copies and NCCL count without a mark.
        TraceEvent p2p = test::trace_event(TraceEventKind::Kernel, "", "allgather_p2p_kernel", 0, 1, 7);
        QCOMPARE(communication_reason(p2p), std::string("name"));
        TraceEvent copy = test::trace_event(TraceEventKind::Memcpy, "", "memcpy", 0, 1, 7);
        copy.copy_kind = "PtoP";
        QVERIFY(is_communication(copy));
        QVERIFY(!is_communication(test::trace_event(TraceEventKind::Kernel, "", "gemm", 0, 1, 7)));
        // A torch profiler's GPU annotation of a c10d collective counts, whatever runs under it: the H200's
        // PKB reference of problem 2 at one rank (NCCL's all-gather a device-to-device copy) read "no
        // communication".
        RankTrace torch;
        torch.rank = 0;
        TraceEvent annotation = test::trace_event(TraceEventKind::NvtxRange, "gpu_user_annotation",
                                                  "nccl:_all_gather_base", 20'000, 35'000);
        TraceEvent dtod = test::trace_event(TraceEventKind::Memcpy, "", "Memcpy DtoD (Device -> Device)",
                                            21'000, 34'000, 7);
        dtod.copy_kind = "DtoD";
        TraceEvent other_range =
            test::trace_event(TraceEventKind::NvtxRange, "gpu_user_annotation", "aten::mm", 50'000, 60'000);
        torch.events = {
            test::trace_event(TraceEventKind::EngineRange, "iteration", "reference/0", 0, 100'000),
            annotation, dtod, other_range,
            test::trace_event(TraceEventKind::Kernel, "", "gemm", 50'000, 60'000, 7)};
        sort_events(torch.events);
        const SideOverlap* t0 = overlap_of(summarize_trace({torch}), 0);
        QVERIFY(t0);
        QCOMPARE(t0->communication_us, 15.0); // the annotation's span, not only its copy
        QCOMPARE(t0->compute_us, 10.0);
        QVERIFY(is_collective_annotation(annotation));
        QVERIFY(!is_collective_annotation(other_range));
        // Its summary row says why it counts, as the overlap counts it.
        bool annotated_row = false;
        for (const TraceSummaryRow& row : summarize_trace({torch}).rows) {
            if (row.name == "nccl:_all_gather_base") {
                QCOMPARE(row.communication, std::string("collective (torch annotation)"));
                annotated_row = true;
            } else if (row.name == "aten::mm") {
                QVERIFY(row.communication.empty());
            }
        }
        QVERIFY(annotated_row);

        // A native (CUPTI) trace at one rank, as the H200 recorded problem 12's reference: NCCL's
        // all-gather is a cudaMemcpyAsync inside the ncclAllGather range on the same thread, its copy a
        // device-to-device one that no name marks; it is NCCL's work. The same copy started outside an
        // NCCL call, or by another thread, is not.
        RankTrace native;
        native.rank = 0;
        auto on_thread = [](TraceEvent e, std::int64_t thread, std::int64_t correlation) {
            e.thread = thread;
            e.correlation_id = correlation;
            return e;
        };
        TraceEvent nccl_range =
            test::trace_event(TraceEventKind::NvtxRange, "", "ncclAllGather", 10'000, 20'000);
        nccl_range.domain = "NCCL";
        auto api = [&](std::int64_t t0, std::int64_t thread, std::int64_t correlation) {
            TraceEvent call = test::trace_event(TraceEventKind::NvtxRange, "cuda_runtime",
                                                "cudaMemcpyAsync_v3020", t0, t0 + 2'000);
            call.domain = "cupti";
            return on_thread(call, thread, correlation);
        };
        auto nccl_copy = [&](std::int64_t t0, std::int64_t correlation) {
            TraceEvent copy =
                test::trace_event(TraceEventKind::Memcpy, "", "memcpy DtoD", t0, t0 + 1'000, 13);
            copy.copy_kind = "DtoD";
            return on_thread(copy, 0, correlation);
        };
        native.events = {
            test::trace_event(TraceEventKind::EngineRange, "iteration", "reference/0", 0, 100'000),
            on_thread(nccl_range, 7, 0),
            api(12'000, 7, 2),
            nccl_copy(21'000, 2),
            api(40'000, 7, 3), // after the NCCL call: the program's own copy
            nccl_copy(45'000, 3),
            api(15'000, 8, 4), // another thread, during the NCCL call
            nccl_copy(50'000, 4)};
        sort_events(native.events);
        QCOMPARE(nccl_issued_calls(native), (std::set<std::int64_t>{2}));
        const TraceSummary ns = summarize_trace({native});
        const SideOverlap* n0 = overlap_of(ns, 0);
        QVERIFY(n0);
        QCOMPARE(n0->communication_us, 1.0); // the NCCL copy alone
        int nccl_rows = 0;
        for (const TraceSummaryRow& row : ns.rows) {
            nccl_rows += row.communication == "issued by NCCL";
        }
        QCOMPARE(
            nccl_rows,
            1); // the DtoD row (one name for the three copies: a row says why if any of its events counts)
    }

    // #10, #11, #8 in the Trace tab: launch configuration on click, rows that zoom to their events,
    // the Comm column's tick, search, and names that keep their identifying part.
    // Review points 11 and 13: the summary's Kind column holds its longest kind ("gpu annotation",
    // "cuda runtime" of a torch-profiled rank; it was cut at 72 px), and a trace of host ranges only,
    // whose caption explains why there is no GPU time, does not widen the window past a laptop screen.
    void trace_kinds_fit_and_a_host_traces_caption_wraps() {
        const QString path = test::temp_path(QStringLiteral("review-kinds.db"));
        QFile::remove(path);
        std::int64_t torch_run = 0, host_run = 0;
        {
            Store store = Store::open(path.toStdString());
            torch_run = test::add_perf_run(store, "1_allreduce", "solutions_cuda_bf16_h200_x_y", 2.0, 1.0);
            RankTrace t;
            t.events = {
                test::trace_event(TraceEventKind::EngineRange, "iteration", "candidate/0", 0, 100'000),
                test::trace_event(TraceEventKind::Kernel, "", "gemm", 25'000, 35'000, 7)};
            for (const char* category : {"cuda_runtime", "gpu_user_annotation"}) {
                TraceEvent e =
                    test::trace_event(TraceEventKind::NvtxRange, category, category, 10'000, 40'000);
                e.domain = "torch";
                t.events.push_back(e);
            }
            sort_events(t.events);
            store_run_traces(store, torch_run, {t});
            host_run = test::add_perf_run(store, "1_allreduce", "solutions_cuda_bf16_h200_x_y", 2.0, 1.0);
            RankTrace host;
            host.events = {
                test::trace_event(TraceEventKind::EngineRange, "iteration", "candidate/0", 0, 100'000),
                test::trace_event(TraceEventKind::EngineRange, "phase", "perf", 0, 200'000)};
            sort_events(host.events);
            store_run_traces(store, host_run, {host});
        }
        TraceView view;
        view.set_store(path);
        QSignalSpy loaded(&view, &TraceView::loaded);
        view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), torch_run)));
        QVERIFY(loaded.wait(10000));
        QTableWidget* s = view.summary_table();
        QStringList kinds;
        for (int r = 0; r < s->rowCount(); ++r) {
            const QString kind = s->item(r, 2)->text();
            kinds << kind;
            const int needed = s->fontMetrics().horizontalAdvance(kind) + 8;
            QVERIFY2(s->columnWidth(2) >= needed,
                     qPrintable(QStringLiteral("'%1' needs %2 px, the column has %3")
                                    .arg(kind)
                                    .arg(needed)
                                    .arg(s->columnWidth(2))));
        }
        QVERIFY2(kinds.contains(QStringLiteral("gpu annotation")) &&
                     kinds.contains(QStringLiteral("cuda runtime")),
                 qPrintable(kinds.join(QStringLiteral(", "))));

        TraceView host_view;
        host_view.set_store(path);
        QSignalSpy host_loaded(&host_view, &TraceView::loaded);
        host_view.set_data(std::make_shared<const RunData>(load_run(path.toStdString(), host_run)));
        QVERIFY(host_loaded.wait(10000));
        QVERIFY2(host_view.minimumSizeHint().width() <= 1366,
                 qPrintable(QStringLiteral("%1 px").arg(host_view.minimumSizeHint().width())));
    }

    void trace_tab_details_rows_search_and_marks() {
        TraceView view;
        view.resize(1400, 900);
        view.set_store(trace_store_);
        QSignalSpy loaded(&view, &TraceView::loaded);
        view.set_data(std::make_shared<const RunData>(load_run(trace_store_.toStdString(), trace_run_)));
        QVERIFY(loaded.wait(10000));
        const auto tl = view.timeline()->trace();
        QVERIFY(tl);
        // The gemm's launch configuration is kept for a click.
        bool found = false;
        for (const auto& lane : tl->lanes) {
            for (const auto& e : lane.events) {
                if (tl->names[e.name].find("gemm_tile") != std::string::npos) {
                    const std::string& d = tl->details.at(e.detail);
                    QVERIFY2(
                        d.find("grid [2, 64, 1], block [384, 1, 1], 168 registers, 213268 B shared memory") !=
                            std::string::npos,
                        d.c_str());
                    QVERIFY(d.find("correlation id 42") != std::string::npos);
                    found = true;
                }
            }
        }
        QVERIFY(found);
        // Names without return type and parameters.
        QTableWidget* s = view.summary_table();
        int gemm = -1, push = -1;
        for (int r = 0; r < s->rowCount(); ++r) {
            if (s->item(r, 1)->text() == QStringLiteral("0") &&
                s->item(r, 3)->text() == QStringLiteral("gemm_tile<float>")) {
                gemm = r;
            }
            if (s->item(r, 1)->text() == QStringLiteral("0") &&
                s->item(r, 3)->text() == QStringLiteral("(anonymous namespace)::push_shards")) {
                push = r;
            }
        }
        QVERIFY(gemm >= 0 && push >= 0);
        // A row zooms to its events and outlines them.
        view.timeline()->set_window(-1000, 1000);
        view.activate_summary_row(gemm);
        QVERIFY(view.timeline()->window_begin() <= 10.0 && view.timeline()->window_end() >= 50.0);
        QVERIFY(view.timeline()->window_end() - view.timeline()->window_begin() < 60.0);
        QCOMPARE(view.timeline()->highlight(), s->item(gemm, 3)->data(Qt::UserRole).toString());
        // Ticking the peer kernel counts it as communication in the overlap table.
        QCOMPARE(view.overlap_table()->item(0, 6)->text(), QStringLiteral("no communication"));
        s->item(push, 8)->setCheckState(Qt::Checked);
        QCOMPARE(view.communication_marks().size(), std::size_t(1));
        QCOMPARE(view.overlap_table()->item(0, 4)->text(), QStringLiteral("40.000"));
        QCOMPARE(view.overlap_table()->item(0, 7)->text(), QStringLiteral("30.000"));
        // Search: both ranks' peer kernels, outlined.
        QCOMPARE(view.search(QStringLiteral("PUSH_shards")), 2);
        QCOMPARE(view.search(QStringLiteral("no such kernel")), 0);
        QCOMPARE(view.search(QString()), 0);
        QVERIFY(view.timeline()->highlight().isEmpty());
    }

    // #22: a store without sweeps says so; no stray legend box.
    void sweeps_empty_state() {
        SweepsView view;
        QSignalSpy loaded(&view, &SweepsView::loaded);
        view.set_store(trace_store_);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(view.progress()->text(), QStringLiteral("no sweep"));
        QVERIFY(!view.fast_p_plot()->legend->visible());
    }

    // #20: a candidate given by its own path is not listed under its parent folder as a generation.
    void ad_hoc_runs_are_not_a_generation() {
        const QString path = test::temp_path(QStringLiteral("review-adhoc.db"));
        QFile::remove(path);
        {
            Store store = Store::open(path.toStdString());
            test::add_run(store, "1_allreduce", "cuda", RunMode::Eval, RunStatus::Pass, std::nullopt, 1);
            test::add_run(store, "1_allreduce", "solutions_cuda_bf16_h200_anthropic_claude", RunMode::Eval,
                          RunStatus::Pass, std::nullopt, 2);
        }
        RunsModel model;
        QSignalSpy loaded(&model, &RunsModel::page_loaded);
        model.set_store(path);
        QVERIFY(loaded.wait(5000));
        QStringList labels;
        for (int r = 0; r < model.rowCount(); ++r) {
            labels << model.index(r, RunsModel::Generation).data().toString();
        }
        labels.sort();
        QCOMPARE(labels, (QStringList{QStringLiteral("ad hoc"), QStringLiteral("anthropic/claude")}));
    }

    // #24: an empty store says how runs get there.
    void first_start_guides_to_a_run() {
        const QString path = test::temp_path(QStringLiteral("review-empty.db"));
        QFile::remove(path);
        Store::open(path.toStdString());
        RunsBrowser browser;
        QSignalSpy loaded(browser.model(), &RunsModel::page_loaded);
        browser.set_store(path);
        QVERIFY(loaded.wait(5000));
        auto* count = browser.findChild<QLabel*>(QStringLiteral("runCount"));
        QVERIFY(count);
        QTRY_VERIFY_WITH_TIMEOUT(count->text().contains(QStringLiteral("Launch tab (Ctrl+L)")), 3000);
        QVERIFY(count->text().contains(QStringLiteral("pkbw eval")));
    }
};

QTEST_MAIN(TestReview)
#include "tst_review.moc"
