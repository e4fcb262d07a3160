// GUI figures: time to open a 10k-run store (first page shown), to pool and render an 8192 x 8192
// heatmap, and the frame time of a timeline pan over 1M events. Runs offscreen:
//   QT_QPA_PLATFORM=offscreen build/bin/pkbw_bench_gui
#include "heatmapview.h"
#include "pkbw/core/store.h"
#include "runsmodel.h"
#include "timelinewidget.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QImage>
#include <QTemporaryDir>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <limits>
#include <qcustomplot.h>
#include <random>

using namespace pkbw;
using namespace pkbw::app;

namespace {

double open_store_ms(const QString& path) {
    QElapsedTimer timer;
    timer.start();
    RunsModel model;
    QEventLoop loop;
    QObject::connect(&model, &RunsModel::page_loaded, &loop, &QEventLoop::quit);
    QObject::connect(&model, &RunsModel::load_failed, &loop, &QEventLoop::quit);
    model.set_store(path);
    loop.exec();
    if (model.total() != 10000) {
        std::fprintf(stderr, "unexpected run count %lld\n", static_cast<long long>(model.total()));
    }
    return static_cast<double>(timer.nsecsElapsed()) / 1e6;
}

} // namespace

int main(int argc, char** argv) {
    qputenv("QT_QPA_PLATFORM",
            qgetenv("QT_QPA_PLATFORM").isEmpty() ? QByteArray("offscreen") : qgetenv("QT_QPA_PLATFORM"));
    QApplication app(argc, argv);
    QTemporaryDir dir;

    // 1. A 10k-run store.
    const QString store_path = dir.filePath(QStringLiteral("bench.db"));
    {
        Store store = Store::open(store_path.toStdString());
        store.write_batch([&] {
            for (int i = 0; i < 10000; ++i) {
                RunRecord run;
                run.problem_stem = "p" + std::to_string(i % 40);
                run.backend = i % 2 ? "host" : "cuda";
                run.world_size = 8;
                const auto id = store.begin_run(run);
                store.finish_run(id, i % 3 ? RunStatus::Pass : RunStatus::Mismatch, 0, "");
            }
        });
    }
    open_store_ms(store_path); // warm the page cache
    double best = 1e9;
    for (int i = 0; i < 5; ++i) {
        best = std::min(best, open_store_ms(store_path));
    }
    std::printf("open 10k-run store (count + first page of %d): %.1f ms (best of 5)\n", RunsModel::kPageSize,
                best);

    // 2. An 8192 x 8192 heatmap: f32 reference and a candidate with a few bad elements.
    const std::int64_t side = 8192;
    Tensor ref = Tensor::zeros(DType::F32, {side, side});
    Tensor cand = Tensor::zeros(DType::F32, {side, side});
    {
        std::mt19937 rng(1);
        std::normal_distribution<float> normal;
        float* r = ref.mutable_data_as<float>();
        float* c = cand.mutable_data_as<float>();
        for (std::int64_t i = 0; i < side * side; ++i) {
            r[i] = normal(rng);
            c[i] = r[i] + 1e-4f * normal(rng);
        }
        c[123456] += 1.0f;
        c[side * side - 7] = std::numeric_limits<float>::quiet_NaN();
    }
    HeatmapView view;
    view.resize(1500, 900);
    view.show();
    for (int round = 0; round < 3; ++round) {
        QElapsedTimer timer;
        timer.start();
        const std::clock_t cpu_start =
            std::clock(); // all threads: the figure a loaded machine distorts least
        HeatmapSet set = compute_heatmaps(ref, cand, 1e-2, 1e-2, 512);
        const double pool_ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
        const double pool_cpu_ms = 1e3 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
        set.title = "bench";
        view.show_set(set);
        for (QCustomPlot* plot : view.plots()) {
            plot->replot(QCustomPlot::rpImmediateRefresh);
        }
        const double total_ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
        std::printf(
            "8192x8192 heatmap: pool %.1f ms (CPU %.1f ms, all threads), pool + render 3 maps and histogram "
            "%.1f ms (%lld mismatches)\n",
            pool_ms, pool_cpu_ms, total_ms, static_cast<long long>(set.error.mismatch_count));
    }

    // 3. Timeline pan over 1M events (8 ranks x 2 streams x 62.5k kernels).
    TimelineWidget timeline;
    timeline.resize(1600, 800);
    timeline.set_trace(std::make_shared<const TimelineData>(synthetic_trace(8, 2, 62500)));
    QImage frame(timeline.size(), QImage::Format_ARGB32_Premultiplied);
    auto pan_frames = [&](const char* label) {
        const int frames = 60;
        QElapsedTimer timer;
        timer.start();
        for (int i = 0; i < frames; ++i) {
            timeline.pan_pixels(-10);
            timeline.render(&frame);
        }
        std::printf("timeline pan, %s: %.2f ms per frame (%zu rectangles in the last frame)\n", label,
                    static_cast<double>(timer.nsecsElapsed()) / 1e6 / frames, timeline.last_drawn());
    };
    pan_frames("whole trace visible (1M events)");
    timeline.zoom(0.01, 800);
    pan_frames("zoomed to 1%");
    timeline.zoom(0.01, 800);
    pan_frames("zoomed to 0.01%");
    return 0;
}
