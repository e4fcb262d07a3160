// Torch-profiler traces on the tracks a profiler user expects, and launches tied to their kernels.
// Review point 12: CPU operators, CUDA runtime calls and the profiler's GPU annotations were one
// "NVTX torch" lane, summarised as "nvtx"; they are three lanes now, host time apart from device time.
// Review point 10: a selected cudaLaunchKernel and the kernel with its correlation id are joined by an
// arrow, the other one outlined, and the selection says the launch latency between them; J (or the
// selection line's link) jumps to the other one, bringing it into view. The summary gives the share of
// each iteration the GPU was busy.
#include "fixtures.h"
#include "timelinewidget.h"
#include "tracedata.h"
#include "tracesummary.h"

#include <QPalette>
#include <QSignalSpy>
#include <QtTest>
#include <algorithm>
#include <cmath>

using namespace pkbw;
using namespace pkbw::app;

namespace {

TraceEvent torch_event(const std::string& category, const std::string& name, std::int64_t t0_us,
                       std::int64_t t1_us, std::int64_t correlation = 0) {
    TraceEvent e;
    e.kind = TraceEventKind::NvtxRange;
    e.domain = "torch";
    e.category = category;
    e.name = name;
    e.start_ns = t0_us * 1000;
    e.end_ns = t1_us * 1000;
    e.correlation_id = correlation;
    e.thread = 1;
    return e;
}

// One step of a torch-profiled rank: aten::mm on the CPU (0-40 µs) calls cudaLaunchKernel (10-15 µs,
// correlation 42), whose kernel runs 25-35 µs on stream 7 under the profiler's GPU annotation.
RankTrace torch_rank() {
    RankTrace t;
    t.events.push_back(torch_event("cpu_op", "aten::mm", 0, 40));
    t.events.push_back(torch_event("cuda_runtime", "cudaLaunchKernel", 10, 15, 42));
    t.events.push_back(torch_event("gpu_user_annotation", "step", 20, 40));
    TraceEvent kernel;
    kernel.kind = TraceEventKind::Kernel;
    kernel.name = "gemm";
    kernel.stream = 7;
    kernel.start_ns = 25'000;
    kernel.end_ns = 35'000;
    kernel.correlation_id = 42;
    t.events.push_back(kernel);
    std::sort(t.events.begin(), t.events.end(),
              [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
    return t;
}

std::size_t lane_named(const TimelineData& d, const std::string& name) {
    for (std::size_t i = 0; i < d.lanes.size(); ++i) {
        if (d.lanes[i].name == name) {
            return i;
        }
    }
    return SIZE_MAX;
}

// Clicks the lane's first event where the widget draws it; the selection line it emits.
QString click(TimelineWidget& w, std::size_t lane) {
    QSignalSpy changed(&w, &TimelineWidget::selection_changed);
    const int y = w.lane_top(lane) + 5;
    for (int x = 0; x < w.width(); ++x) {
        std::size_t l = 0, e = 0;
        if (w.hit(QPointF(x + 0.5, y), &l, &e) && l == lane) {
            w.select_at(QPointF(x + 0.5, y));
            return changed.isEmpty() ? QString() : changed.last().first().toString();
        }
    }
    return {};
}

} // namespace

class TestFlows : public QObject {
    Q_OBJECT
private slots:
    void torch_events_get_their_own_tracks() {
        const TimelineData d = timeline_from_traces({torch_rank()});
        for (const char* lane : {"torch CPU", "torch CUDA runtime", "torch GPU annotation", "stream 7"}) {
            QVERIFY2(lane_named(d, lane) != SIZE_MAX, lane);
        }
        QCOMPARE(lane_named(d, "NVTX torch"), SIZE_MAX);
        QCOMPARE(d.lanes[lane_named(d, "torch CUDA runtime")].events.size(), std::size_t(1));
        QCOMPARE(torch_track(torch_event("python_function", "forward", 0, 1)), std::string("CPU"));
    }

    // pkbw's own tracer records the CUDA API calls of the traced pass (domain "cupti"): they get a
    // "CUDA API" lane of their rank, not an NVTX one, their correlation ids join them to their kernels,
    // and the summary names their kind.
    void native_api_calls_get_a_cuda_api_lane_joined_to_their_kernels() {
        RankTrace t;
        TraceEvent launch = torch_event("cuda_runtime", "cudaLaunchKernel_v7000", 10, 14, 9);
        launch.domain = "cupti";
        TraceEvent kernel;
        kernel.kind = TraceEventKind::Kernel;
        kernel.name = "allreduce_kernel";
        kernel.stream = 13;
        kernel.start_ns = 20'000;
        kernel.end_ns = 30'000;
        kernel.correlation_id = 9;
        t.events = {launch, kernel};
        const TimelineData d = timeline_from_traces({t});
        const std::size_t api = lane_named(d, "CUDA API"), stream = lane_named(d, "stream 13");
        QVERIFY(api != SIZE_MAX);
        QCOMPARE(lane_named(d, "NVTX cupti"), SIZE_MAX);
        QCOMPARE(d.correlated(api, 0), (std::vector<std::pair<std::size_t, std::size_t>>{{stream, 0}}));
        QVERIFY(is_cuda_api_call(launch));
        QVERIFY(!is_cuda_api_call(
            torch_event("cuda_runtime", "cudaLaunchKernel", 10, 14, 9))); // torch's own lane
    }

    void a_launch_and_its_kernel_are_joined() {
        auto d = std::make_shared<const TimelineData>(timeline_from_traces({torch_rank()}));
        const std::size_t runtime = lane_named(*d, "torch CUDA runtime"), stream = lane_named(*d, "stream 7");
        QCOMPARE(d->correlated(runtime, 0), (std::vector<std::pair<std::size_t, std::size_t>>{{stream, 0}}));
        QVERIFY(d->correlated(lane_named(*d, "torch CPU"), 0).empty()); // no correlation id, no partner
        TimelineWidget w;
        w.resize(1000, 400);
        w.set_trace(d);
        w.set_window(0, 50);
        const QString launch = click(w, runtime);
        QVERIFY2(launch.contains(QStringLiteral("launches gemm (stream 7), which starts 15.000 µs later")),
                 qPrintable(launch));
        QCOMPARE(w.flow_partners().size(), std::size_t(1));
        const QString kernel = click(w, stream);
        QVERIFY2(kernel.contains(QStringLiteral(
                     "launched by cudaLaunchKernel (torch CUDA runtime), 15.000 µs before it starts")),
                 qPrintable(kernel));
        QCOMPARE(w.flow_partners().front().first, runtime);
        w.grab(); // the arrow is painted without complaint
    }

    void the_launch_is_outlined_and_j_jumps_to_it() {
        auto d = std::make_shared<const TimelineData>(timeline_from_traces({torch_rank()}));
        const std::size_t runtime = lane_named(*d, "torch CUDA runtime"), stream = lane_named(*d, "stream 7");
        TimelineWidget w;
        w.resize(1000, 400);
        w.set_trace(d);
        w.set_window(0, 50);
        // The launch (10-15 µs) before and after its kernel is selected: its top and bottom edges turn
        // the selection colour over 11-14 µs (x = 170 + t / 50 * 830 px: the lanes' labels take 170). The
        // arrow leaves the launch at its middle for one lane or the other, so it crosses one edge at most,
        // and only over a few columns.
        const QColor highlight = w.palette().color(QPalette::Highlight);
        auto edge_columns = [&](const QImage& image, int y0) {
            int columns = 0;
            for (int x = 170 + 11 * 830 / 50; x < 170 + 14 * 830 / 50; ++x) {
                bool hit = false;
                for (int y = y0; y <= y0 + 2; ++y) {
                    const QColor c = image.pixelColor(x, y);
                    hit = hit || std::abs(c.red() - highlight.red()) +
                                         std::abs(c.green() - highlight.green()) +
                                         std::abs(c.blue() - highlight.blue()) <
                                     60;
                }
                columns += hit ? 1 : 0;
            }
            return columns;
        };
        auto outlined = [&] {
            const QImage image = w.grab().toImage();
            const int top = w.lane_top(runtime);
            return std::min(edge_columns(image, top), edge_columns(image, top + w.lane_height(runtime) - 2));
        };
        QCOMPARE(outlined(), 0);
        const QString kernel = click(w, stream);
        QVERIFY2(kernel.contains(QStringLiteral("href=\"flow\"")), qPrintable(kernel));
        const int columns = outlined();
        QVERIFY2(columns >= 42, qPrintable(QString::number(columns))); // of 50
        // Zoomed to the kernel alone, the launch is out of view: J selects it and brings it in, the
        // window keeping its span.
        w.set_window(24, 36);
        QSignalSpy changed(&w, &TimelineWidget::selection_changed);
        QTest::keyClick(&w, Qt::Key_J);
        QCOMPARE(changed.size(), 1);
        QVERIFY2(changed.last().first().toString().startsWith(QStringLiteral("<b>cudaLaunchKernel</b>")),
                 qPrintable(changed.last().first().toString()));
        QVERIFY(w.window_begin() <= 10 && w.window_end() >= 15);
        QVERIFY(std::fabs((w.window_end() - w.window_begin()) - 12) < 1e-9);
        QCOMPARE(w.flow_partners(), (std::vector<std::pair<std::size_t, std::size_t>>{{stream, 0}}));
        QVERIFY(w.follow_flow()); // and back to the kernel
        QCOMPARE(w.flow_partners().front().first, runtime);
        w.set_trace(std::make_shared<const TimelineData>(timeline_from_traces({torch_rank()})));
        QVERIFY(!w.follow_flow()); // nothing selected, nothing to follow
    }

    void gpu_busy_share_per_rank_and_iteration() {
        // Two reference iterations of 100 µs: the first with a kernel (10-40 µs) and a copy overlapping
        // it (30-50 µs), busy 40%; the second a 15 µs kernel, busy 15%.
        RankTrace t;
        t.rank = 1;
        t.events = {
            test::trace_event(TraceEventKind::EngineRange, "iteration", "reference/0", 0, 100'000),
            test::trace_event(TraceEventKind::Kernel, "", "gemm", 10'000, 40'000, 7),
            test::trace_event(TraceEventKind::Memcpy, "", "memcpy DtoH", 30'000, 50'000, 7),
            test::trace_event(TraceEventKind::EngineRange, "iteration", "reference/1", 100'000, 200'000),
            test::trace_event(TraceEventKind::Kernel, "", "gemm", 110'000, 125'000, 7),
        };
        sort_events(t.events);
        const TraceSummary s = summarize_trace({t});
        QCOMPARE(s.overlaps.size(), std::size_t(1));
        const SideOverlap& o = s.overlaps[0];
        QCOMPARE(o.rank, 1);
        QCOMPARE(o.idle_us, 145.0);
        QCOMPARE(o.busy_percent, 27.5);
        QCOMPARE(o.busy_percent_by_iteration, (std::vector<double>{40.0, 15.0}));
        // A selection of the second half of the first iteration: 50-100 µs, busy 0.
        const TraceSummary half =
            summarize_trace({t}, std::pair<std::int64_t, std::int64_t>{50'000, 100'000});
        QCOMPARE(half.overlaps[0].busy_percent_by_iteration, (std::vector<double>{0.0}));
    }
};

QTEST_MAIN(TestFlows)
#include "tst_flows.moc"
