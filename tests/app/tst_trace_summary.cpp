// The trace summary and the timeline's opening window on synthetic traces: a selection's summary
// clipped to the selection, profiles without profiler steps summarised by side, and the timeline opened
// on the candidate's iterations when the two sides lie far apart.
#include "fixtures.h"
#include "pkbw/core/trace.h"
#include "tracedata.h"
#include "tracesummary.h"

#include <QtTest>

using namespace pkbw;
using namespace pkbw::app;

class TestTraceSummary : public QObject {
    Q_OBJECT

private slots:
    // Review audit: a selection's summary counted an event that starts inside the selection but ends
    // after it at its full length (and left out one that began before it), though its title says
    // "clipped".
    void selection_summary_is_clipped_to_the_selection() {
        RankTrace t;
        t.rank = 0;
        // An iteration of 100 µs: a kernel 10-50 µs, an NCCL kernel 60-90 µs, a kernel that outlasts
        // the iteration (95-130 µs).
        t.events = {
            test::trace_event(TraceEventKind::EngineRange, "iteration", "reference/0", 0, 100'000),
            test::trace_event(TraceEventKind::Kernel, "", "gemm", 10'000, 50'000, 7),
            test::trace_event(TraceEventKind::Kernel, "", "ncclDevKernel_AllReduce", 60'000, 90'000, 8),
            test::trace_event(TraceEventKind::Kernel, "", "tail", 95'000, 130'000, 7),
        };
        sort_events(t.events);
        auto total = [](const TraceSummary& s, const std::string& name) {
            for (const auto& row : s.rows) {
                if (row.name == name) {
                    return row.total_us;
                }
            }
            return -1.0;
        };
        // Without a selection: full lengths, as each event starts in the iteration.
        const TraceSummary whole = summarize_trace({t});
        QCOMPARE(total(whole, "gemm"), 40.0);
        QCOMPARE(total(whole, "tail"), 35.0);
        QCOMPARE(whole.rows.size(), std::size_t(3));

        // 30-70 µs: gemm's last 20 µs (it began before), the NCCL kernel's first 10 µs (it ends after).
        const TraceSummary sel = summarize_trace({t}, std::pair<std::int64_t, std::int64_t>{30'000, 70'000});
        QCOMPARE(sel.rows.size(), std::size_t(2));
        QCOMPARE(total(sel, "gemm"), 20.0);
        QCOMPARE(total(sel, "ncclDevKernel_AllReduce"), 10.0);
        QCOMPARE(total(sel, "tail"), -1.0);
        for (const auto& row : sel.rows) {
            QCOMPARE(row.count, qint64(1));
            QCOMPARE(row.percent_of_iteration, row.name == "gemm" ? 50.0 : 25.0); // of the 40 µs selected
        }
        QCOMPARE(sel.overlaps.size(), std::size_t(1));
        QCOMPARE(sel.overlaps[0].iteration_us, 40.0);
        // 80-100 µs: the NCCL kernel's 10 µs and tail's first 5 µs; gemm ended before.
        const TraceSummary end = summarize_trace({t}, std::pair<std::int64_t, std::int64_t>{80'000, 100'000});
        QCOMPARE(total(end, "gemm"), -1.0);
        QCOMPARE(total(end, "ncclDevKernel_AllReduce"), 10.0);
        QCOMPARE(total(end, "tail"), 5.0);
    }

    // PKB's worker profiles without profiler.step() (the H200 logs hold no ProfilerStep#N), and the two
    // sides were profiled tens of seconds apart: each side's phase range is its window, so the summary
    // reads by side instead of one "trace" row set over the whole gap.
    void profiles_without_steps_are_summarised_by_side() {
        RankTrace t;
        t.rank = 0;
        TraceEvent ref = test::trace_event(TraceEventKind::EngineRange, "phase", "reference", 0, 100'000);
        ref.payload = {{"side", "reference"}, {"trial", 0}, {"source", "torch-profiler"}};
        TraceEvent cand = test::trace_event(TraceEventKind::EngineRange, "phase", "candidate", 72'000'000'000,
                                            72'000'050'000);
        cand.payload = {{"side", "candidate"}, {"trial", 0}, {"source", "torch-profiler"}};
        t.events = {
            ref, cand, test::trace_event(TraceEventKind::Kernel, "", "concat_k", 10'000, 30'000, 7),
            test::trace_event(TraceEventKind::Kernel, "", "push_shard", 72'000'010'000, 72'000'020'000, 7)};
        sort_events(t.events);
        const TraceSummary s = summarize_trace({t});
        QCOMPARE(s.rows.size(), std::size_t(2));
        QCOMPARE(QString::fromStdString(s.rows[0].side), QStringLiteral("reference"));
        QCOMPARE(s.rows[0].percent_of_iteration, 20.0); // 20 of the reference's 100 µs
        QCOMPARE(QString::fromStdString(s.rows[1].side), QStringLiteral("candidate"));
        QCOMPARE(s.rows[1].percent_of_iteration, 20.0); // 10 of 50 µs
        QCOMPARE(s.overlaps.size(), std::size_t(2));
        // A phase that names no side (pkbw's own "perf" phase) leaves the whole span as "trace".
        t.events = {test::trace_event(TraceEventKind::EngineRange, "phase", "perf", 0, 100'000),
                    test::trace_event(TraceEventKind::Kernel, "", "gemm", 10'000, 30'000, 7)};
        const TraceSummary plain = summarize_trace({t});
        QCOMPARE(plain.rows.size(), std::size_t(1));
        QCOMPARE(QString::fromStdString(plain.rows[0].side), QStringLiteral("trace"));
    }

    // The timeline opens on both sides' traced iterations, unless a gap (a side's warm-up call) would
    // take most of that view: then on the candidate's (the H200 store: 0.4 ms of iterations a side, 5.3
    // ms of warm-up between them, every kernel a pixel wide).
    void timeline_opens_on_the_candidates_iterations_when_the_sides_lie_far_apart() {
        TimelineData far;
        far.iterations = {{0, "reference", 0, 40},
                          {0, "reference", 40, 80},
                          {0, "candidate", 5400, 5450},
                          {0, "candidate", 5450, 5500}};
        QCOMPARE(QString::fromStdString(far.focus_side()), QStringLiteral("candidate"));
        const auto [t0, t1] = far.focus();
        QVERIFY2(t0 > 5390 && t0 < 5400 && t1 > 5500 && t1 < 5510,
                 qPrintable(QStringLiteral("%1 %2").arg(t0).arg(t1)));
        TimelineData near = far;
        near.iterations[2] = {0, "candidate", 100, 150};
        near.iterations[3] = {0, "candidate", 150, 200};
        QVERIFY(near.focus_side().empty());
        const auto [n0, n1] = near.focus();
        QVERIFY2(n0 < 0 && n1 > 200, qPrintable(QStringLiteral("%1 %2").arg(n0).arg(n1)));
    }
};

QTEST_MAIN(TestTraceSummary)
#include "tst_trace_summary.moc"
