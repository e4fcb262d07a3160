// PKB's own artifacts in the workbench (issue 19 point 6): a miniature logs folder as PKB's
// run_local.py --download --profile --measure-perf leaves it (per side and trial rank_<r>.pt,
// rank_<r>_perf.json and traces/rank_<r>.json), imported with `pkbw import-pkb`, then opened as a user
// would: the Run tab's heatmaps and tolerance explorer on the .pt values, the Trace tab on the
// torch-profiler events with their summary. Also the Trace tab's fallback to the trace_<side>
// artifacts when the store holds no trace. The summary and the timeline's focus on synthetic traces are
// tst_trace_summary.cpp's.
#include "../core/torch_pt_zip_writer.h"
#include "fixtures.h"
#include "heatmapview.h"
#include "pkbw/core/store.h"
#include "pkbw/core/trace_store.h"
#include "runview.h"
#include "timelinewidget.h"
#include "tolerancemodel.h"
#include "tracesummary.h"
#include "traceview.h"

#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

using namespace pkbw;
using namespace pkbw::app;
namespace fs = std::filesystem;

namespace {

// --- .pt files through the repo's torch.save-format writer (tests/core/torch_pt_zip_writer.h) ----
// The pickle torch.save writes for one contiguous f32 tensor of storage "0":
// torch._utils._rebuild_tensor_v2(('storage', torch.FloatStorage, '0', 'cpu', numel), 0, size, stride,
// False, OrderedDict()). Opcodes: PROTO 2, GLOBAL, MARK, BINUNICODE, BININT, TUPLE, BINPERSID,
// NEWFALSE, EMPTY_TUPLE, REDUCE, STOP (core reads them without running any code).
std::string text_op(std::string_view text) {
    std::string s = "X";
    for (int i = 0; i < 4; ++i) {
        s.push_back(static_cast<char>((text.size() >> (8 * i)) & 0xFF));
    }
    return s + std::string(text);
}
std::string int_op(std::int64_t v) {
    std::string s = "J";
    for (int i = 0; i < 4; ++i) {
        s.push_back(static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF));
    }
    return s;
}
std::string global_op(const std::string& module, const std::string& name) {
    return "c" + module + "\n" + name + "\n";
}

void write_f32_pt(const fs::path& file, std::int64_t rows, std::int64_t cols,
                  const std::vector<float>& values) {
    const std::string pickle = std::string("\x80\x02", 2) + global_op("torch._utils", "_rebuild_tensor_v2") +
                               "((" + text_op("storage") + global_op("torch", "FloatStorage") + text_op("0") +
                               text_op("cpu") + int_op(rows * cols) + "tQ" + int_op(0) + "(" + int_op(rows) +
                               int_op(cols) + "t(" + int_op(cols) + int_op(1) + "t\x89" +
                               global_op("collections", "OrderedDict") + ")RtR.";
    const std::string storage(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    const auto bytes = test::make_zip(
        {{"archive/data.pkl", pickle}, {"archive/data/0", storage}, {"archive/version", "3\n"}});
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Reference: 4x6 values 0, 0.25, ..., 5.75. Candidate: the same but [1, 2] (2.0) is 2.75.
std::vector<float> reference_values() {
    std::vector<float> v(24);
    for (int i = 0; i < 24; ++i) {
        v[static_cast<std::size_t>(i)] = 0.25f * static_cast<float>(i);
    }
    return v;
}
std::vector<float> candidate_values() {
    auto v = reference_values();
    v[8] += 0.75f;
    return v;
}

// --- torch-profiler traces ------------------------------------------------------------------------
constexpr std::int64_t kBaseNs = 1'700'000'000'000'000'000; // the profiler's epoch clock, as PKB's are

// One side's profile at `base_us` (ts are µs after baseTimeNanoseconds): two profiler steps of 40 µs;
// in step 0 an aten::cat CPU op (6 µs) and `kernel` (12 µs), in step 1 an NCCL all-gather (20 µs).
// `refused`: plus a cudaDeviceSynchronize with a negative duration, which core's strict reader refuses
// (so import-pkb stores no trace for the run and keeps only the trace_<side> artifacts).
void write_profile(const fs::path& file, std::int64_t base_us, const std::string& kernel, bool refused) {
    fs::create_directories(file.parent_path());
    std::ofstream out(file);
    out << R"({"schemaVersion": 1, "baseTimeNanoseconds": )" << kBaseNs << R"(, "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": )"
        << base_us << R"(, "dur": 40},
  {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": )"
        << base_us + 2 << R"(, "dur": 6},
  {"ph": "X", "cat": "kernel", "name": ")"
        << kernel << R"(", "pid": 0, "tid": 7, "ts": )" << base_us + 5
        << R"(, "dur": 12, "args": {"device": 0, "stream": 7, "correlation": 11, "grid": [4, 1, 1],
    "block": [256, 1, 1], "registers per thread": 32, "shared memory": 0}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": )"
        << base_us + 50 << R"(, "dur": 40},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "pid": 0, "tid": 7, "ts": )"
        << base_us + 55 << R"(, "dur": 20, "args": {"device": 0, "stream": 7}})";
    if (refused) {
        out << R"(,
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": )"
            << base_us + 95 << R"(, "dur": -1})";
    }
    out << "\n]}\n";
}

void write_perf(const fs::path& file, double ms) {
    std::ofstream(file) << "{\"wall_time_ms\": " << ms
                        << ", \"wall_time_std_ms\": 0.5, \"iterations\": 100.0}";
}

const fs::path kTorchFixtures = fs::path(PKBW_TEST_SOURCE_DIR) / ".." / "core" / "fixtures" / "torch_pt";

// PKB's logs folder: problem 2 (trial 0: the 4x6 pair written here, one element off by 0.75; trial 1:
// torch's own transpose.pt on both sides, equal) with readable profiles, and problem 5 (equal outputs)
// whose profiles core refuses.
void write_pkb_logs(const fs::path& logs) {
    const fs::path p2 = logs / "problem_2_allgather";
    for (int trial = 0; trial < 2; ++trial) {
        const std::string t = "trial_" + std::to_string(trial);
        if (trial == 0) {
            write_f32_pt(p2 / "reference" / t / "rank_0.pt", 4, 6, reference_values());
            write_f32_pt(p2 / "cuda" / t / "rank_0.pt", 4, 6, candidate_values());
        } else {
            for (const char* side : {"reference", "cuda"}) {
                fs::create_directories(p2 / side / t);
                fs::copy_file(kTorchFixtures / "transpose.pt", p2 / side / t / "rank_0.pt");
            }
        }
        write_perf(p2 / "reference" / t / "rank_0_perf.json", trial == 0 ? 1.44 : 0.665);
        write_perf(p2 / "cuda" / t / "rank_0_perf.json", 1.0);
        write_profile(p2 / "reference" / t / "traces" / "rank_0.json", 1000 + 10000 * trial, "concat_k",
                      false);
        write_profile(p2 / "cuda" / t / "traces" / "rank_0.json", 5000 + 10000 * trial, "push_shard", false);
    }
    const fs::path p5 = logs / "problem_5_alltoall";
    for (int trial = 0; trial < 2; ++trial) {
        const std::string t = "trial_" + std::to_string(trial);
        write_f32_pt(p5 / "reference" / t / "rank_0.pt", 4, 6, reference_values());
        write_f32_pt(p5 / "cuda" / t / "rank_0.pt", 4, 6, reference_values());
        write_profile(p5 / "reference" / t / "traces" / "rank_0.json", 1000 + 10000 * trial, "scatter_k",
                      true);
        write_profile(p5 / "cuda" / t / "traces" / "rank_0.json", 5000 + 10000 * trial, "a2a_k", true);
    }
    // Problem 7: run without --profile, so no traces/ at all.
    write_f32_pt(logs / "problem_7_reduce" / "reference" / "trial_0" / "rank_0.pt", 4, 6, reference_values());
    write_f32_pt(logs / "problem_7_reduce" / "cuda" / "trial_0" / "rank_0.pt", 4, 6, reference_values());
}

struct Imported {
    QString store;
    std::int64_t traced = 0;   // problem 2: its trace in the store
    std::int64_t refused = 0;  // problem 5: trace_<side> artifacts only
    std::int64_t untraced = 0; // problem 7: no trace files
    QString output;            // what pkbw import-pkb printed
};

// `pkbw import-pkb LOGS --store DB --generation …`, as a user runs it; once per test process.
const Imported& imported() {
    static Imported result = [] {
        Imported r;
        const fs::path root = test::temp_path(QStringLiteral("pkb")).toStdString();
        write_pkb_logs(root / "logs");
        r.store = QString::fromStdString((root / "store" / "runs.db").string());
        fs::create_directories(root / "store");
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(QStringLiteral(PKBW_BINARY_DIR "/bin/pkbw"),
                {QStringLiteral("import-pkb"), QString::fromStdString((root / "logs").string()),
                 QStringLiteral("--store"), r.store, QStringLiteral("--generation"),
                 QStringLiteral("solutions_cuda_bf16_h200_2_anthropic_claude-opus-4-7")});
        p.waitForFinished(60000);
        r.output = QString::fromUtf8(p.readAll());
        if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
            return r;
        }
        const Store store = Store::open_read_only(r.store.toStdString());
        for (const RunRecord& run : store.list_runs()) {
            (run.problem_id == 2 ? r.traced : run.problem_id == 5 ? r.refused : r.untraced) = run.id;
        }
        return r;
    }();
    return result;
}

double cell_number(const QTableWidget* t, int row, int column) {
    return t->item(row, column) ? t->item(row, column)->data(Qt::UserRole).toDouble() : -1;
}

// The summary table's row of (side, kind, name), or -1.
int summary_row(const QTableWidget* t, const QString& side, const QString& name) {
    for (int i = 0; i < t->rowCount(); ++i) {
        if (t->item(i, 0)->text() == side && t->item(i, 3)->text() == name) {
            return i;
        }
    }
    return -1;
}

} // namespace

class TestTrace : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test"));
        const Imported& r = imported();
        QVERIFY2(r.traced > 0 && r.refused > 0 && r.untraced > 0, qPrintable(r.output));
        // core refused problem 5's profiles and said so; problem 2's were stored.
        QVERIFY2(r.output.contains(QStringLiteral("trace not imported")) &&
                     r.output.contains(QStringLiteral("negative 'dur'")),
                 qPrintable(r.output));
        const Store store = Store::open_read_only(r.store.toStdString());
        QCOMPARE(traced_ranks(store, r.traced), std::vector<int>{0});
        QVERIFY(traced_ranks(store, r.refused).empty());
    }

    // (a) The Run tab on the imported run: the heatmaps read the .pt files, the explorer rescores them.
    void imported_pt_outputs_in_heatmaps_and_tolerance_explorer() {
        const Imported& r = imported();
        RunView view;
        view.resize(1400, 900);
        view.set_store(r.store);
        QSignalSpy heatmaps(&view, &RunView::heatmaps_ready);
        QSignalSpy rescored(&view, &RunView::rescore_ready);
        view.open_run(r.traced);
        // Opened on the failing cell (trial 0, rank 0) and its output.
        QTRY_VERIFY_WITH_TIMEOUT(heatmaps.count() > 0 && rescored.count() > 0, 10000);
        QCOMPARE(view.tensor_names(), QStringList{QStringLiteral("output")});
        const HeatmapSet& set = view.heatmaps()->current();
        QVERIFY2(set.has_values, "the heatmaps did not read the .pt files (stored error map only)");
        QCOMPARE(set.shape, (Shape{4, 6}));
        QCOMPARE(set.cand_tensor.get_f32(8), 2.75f);
        QCOMPARE(set.ref_tensor.get_f32(23), 5.75f);
        const QString summary = view.heatmaps()->summary_text();
        QVERIFY2(summary.contains(QStringLiteral("1 of 24 elements mismatch")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("max |diff| 0.75 at [1, 2]")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("reference 2, candidate 2.75")), qPrintable(summary));

        // The explorer at PKB's tolerances (atol = rtol = 0.01): trial 0 fails by one element, trial 1
        // (torch's transpose.pt on both sides) passes.
        QVERIFY2(view.rescore_text().contains(QStringLiteral("1 of 2 rank-trials pass")),
                 qPrintable(view.rescore_text()));
        const auto& rows = view.tolerance_model()->rows();
        QCOMPARE(rows.size(), std::size_t(2));
        for (const Rescored& row : rows) {
            // Trial 0's comparison of the two .pt files read, not a read failure.
            QVERIFY2(row.trial == 0
                         ? row.first_error.find("max_abs_diff=0.75 mismatches=1/24") != std::string::npos
                         : row.first_error.empty(),
                     row.first_error.c_str());
            QCOMPARE(row.pass, row.trial == 1);
            QCOMPARE(row.mismatch_count, qint64(row.trial == 0 ? 1 : 0));
            if (row.trial == 0) {
                // |2.75 - 2| <= atol + 0.01 * 2.75 from atol 0.7225.
                QVERIFY2(std::fabs(row.min_passing_atol - 0.7225) < 1e-6,
                         qPrintable(QString::number(row.min_passing_atol, 'g', 10)));
            }
        }
        rescored.clear();
        heatmaps.clear();
        view.set_tolerances(0.8, 0.01);
        QTRY_VERIFY_WITH_TIMEOUT(rescored.count() > 0 && heatmaps.count() > 0, 10000);
        QVERIFY2(view.rescore_text().contains(QStringLiteral("2 of 2 rank-trials pass")),
                 qPrintable(view.rescore_text()));
        QVERIFY2(view.heatmaps()->summary_text().contains(QStringLiteral("0 of 24 elements mismatch")),
                 qPrintable(view.heatmaps()->summary_text()));

        // Trial 1: torch's own non-contiguous 6x4 transpose, read from the .pt on both sides.
        heatmaps.clear();
        view.select_cell(0, 1);
        QTRY_VERIFY_WITH_TIMEOUT(heatmaps.count() > 0, 10000);
        QVERIFY(view.heatmaps()->current().has_values);
        QCOMPARE(view.heatmaps()->current().shape, (Shape{6, 4}));
        QCOMPARE(view.heatmaps()->current().cand_tensor.get_f32(1), 6.0f); // [0][1] = base[1][0]
        QVERIFY2(view.heatmaps()->summary_text().contains(QStringLiteral("0 of 24 elements mismatch")),
                 qPrintable(view.heatmaps()->summary_text()));
    }

    // (b) The Trace tab on the imported run: the torch-profiler events of trial 0 from the store.
    void imported_profiler_trace_in_the_trace_tab() {
        const Imported& r = imported();
        TraceView view;
        view.resize(1400, 900);
        view.set_store(r.store);
        QSignalSpy loaded(&view, &TraceView::loaded);
        view.set_data(std::make_shared<const RunData>(load_run(r.store.toStdString(), r.traced)));
        QVERIFY(loaded.wait(10000));
        // Per side: 2 steps, aten::cat, a kernel, the NCCL kernel and the side's phase range.
        const auto tl = view.timeline()->trace();
        QVERIFY(tl);
        QCOMPARE(tl->event_count(), std::size_t(12));
        QCOMPARE(tl->iterations.size(), std::size_t(4));
        QVERIFY2(view.info_text().contains(QStringLiteral("12 events")) &&
                     view.info_text().contains(QStringLiteral("4 traced iterations")),
                 qPrintable(view.info_text()));
        // PKB profiled the sides in two launches: placed end to end, and the header says so.
        QVERIFY2(view.info_text().contains(QStringLiteral("placed end to end")),
                 qPrintable(view.info_text()));
        QVERIFY(std::find(tl->names.begin(), tl->names.end(), "push_shard") != tl->names.end());
        QVERIFY(std::find(tl->names.begin(), tl->names.end(), "concat_k") != tl->names.end());
        // Opened on the iterations: the reference's first step (1000 µs) is inside the window.
        const double first_step_us = static_cast<double>(kBaseNs) / 1e3 + 1000;
        QVERIFY(view.timeline()->window_begin() <= first_step_us &&
                view.timeline()->window_end() > first_step_us);

        // The summary: per side the NCCL kernel (20 of the 80 µs of iterations), the side's kernel
        // (12 µs) and aten::cat (6 µs); no communication overlapped.
        QTableWidget* s = view.summary_table();
        QCOMPARE(s->rowCount(), 6);
        const int nccl =
            summary_row(s, QStringLiteral("reference"), QStringLiteral("ncclDevKernel_AllGather_RING_LL"));
        QVERIFY(nccl >= 0);
        QCOMPARE(s->item(nccl, 2)->text(), QStringLiteral("kernel"));
        QCOMPARE(s->item(nccl, 4)->text(), QStringLiteral("1"));
        QCOMPARE(s->item(nccl, 5)->text(), QStringLiteral("20.000"));
        QCOMPARE(s->item(nccl, 7)->text(), QStringLiteral("25.0"));
        const int push = summary_row(s, QStringLiteral("candidate"), QStringLiteral("push_shard"));
        QVERIFY(push >= 0);
        QCOMPARE(s->item(push, 5)->text(), QStringLiteral("12.000"));
        QCOMPARE(s->item(push, 7)->text(), QStringLiteral("15.0"));
        const int cat = summary_row(s, QStringLiteral("candidate"), QStringLiteral("aten::cat"));
        QVERIFY(cat >= 0);
        QCOMPARE(s->item(cat, 2)->text(), QStringLiteral("cpu")); // a torch CPU operator, not "nvtx"
        QCOMPARE(s->item(cat, 5)->text(), QStringLiteral("6.000"));
        QCOMPARE(view.overlap_table()->rowCount(), 2);
        QCOMPARE(view.overlap_table()->item(0, 0)->text(), QStringLiteral("reference"));
        QCOMPARE(view.overlap_table()->item(0, 2)->text(), QStringLiteral("2"));
        QCOMPARE(view.overlap_table()->item(0, 4)->text(), QStringLiteral("20.000"));
        QCOMPARE(view.overlap_table()->item(0, 6)->text(), QStringLiteral("0.0"));

        // A selection of the reference's step 1 from 50 to 60 µs: the NCCL kernel (55-75 µs) counts
        // its 5 µs inside it, 50% of the 10 µs selected, not its 20 µs (200%).
        const double step1_us = static_cast<double>(kBaseNs) / 1e3 + 1050;
        view.timeline()->select_area(step1_us, step1_us + 10);
        QCOMPARE(s->rowCount(), 1);
        QCOMPARE(s->item(0, 3)->text(), QStringLiteral("ncclDevKernel_AllGather_RING_LL"));
        // The profiler's epoch clock in µs as a double: a fraction of a µs of rounding.
        QVERIFY2(std::fabs(cell_number(s, 0, 5) - 5.0) < 0.3, qPrintable(s->item(0, 5)->text()));
        QVERIFY2(std::fabs(cell_number(s, 0, 7) - 50.0) < 5, qPrintable(s->item(0, 7)->text()));
    }

    // Review audit: the fallback to trace artifacts matched kind "trace" only, so an imported run
    // whose torch-profiler traces the store does not hold (core refused them) showed "no trace".
    void trace_side_artifacts_are_opened_when_the_store_holds_none() {
        const Imported& r = imported();
        const RunData data = load_run(r.store.toStdString(), r.refused);
        TraceView view;
        view.resize(1400, 900);
        view.set_store(r.store);
        QSignalSpy loaded(&view, &TraceView::loaded);
        view.set_data(std::make_shared<const RunData>(data));
        QVERIFY2(loaded.wait(10000), qPrintable(view.info_text()));
        const auto tl = view.timeline()->trace();
        QVERIFY(tl);
        // Trial 0's two files of 6 events each; the profiler steps are the traced iterations.
        QCOMPARE(tl->event_count(), std::size_t(12));
        QCOMPARE(tl->iterations.size(), std::size_t(4));
        // The two profiles' steps lie far apart (their first steps' one-time costs between them): the view
        // opens on the candidate's.
        QVERIFY2(view.info_text().contains(QStringLiteral("opened on the candidate's 2 traced iterations")),
                 qPrintable(view.info_text()));
        QStringList lanes;
        for (const TimelineLane& lane : tl->lanes) {
            lanes << QString::fromStdString(lane.name);
            QCOMPARE(lane.rank, 0);
        }
        QVERIFY2(lanes.contains(QStringLiteral("reference stream 7")) &&
                     lanes.contains(QStringLiteral("candidate stream 7")),
                 qPrintable(lanes.join(QStringLiteral(", "))));
        QVERIFY(std::find(tl->names.begin(), tl->names.end(), "a2a_k") != tl->names.end());
        QCOMPARE(
            std::count(tl->names.begin(), tl->names.end(), std::string("ncclDevKernel_AllGather_RING_LL")),
            std::ptrdiff_t(1)); // one name for both files' events

        // What it opened: trial 0's file of each side (not trial 1's).
        const QList<TraceFile> files = trace_artifacts(data);
        QCOMPARE(files.size(), 2); // trial 0's, one per side
        QStringList sides;
        for (const TraceFile& f : files) {
            sides << f.side;
            QVERIFY2(f.path.contains(QStringLiteral("/trial_0/traces/rank_0.json")), qPrintable(f.path));
        }
        sides.sort();
        QCOMPARE(sides, (QStringList{QStringLiteral("candidate"), QStringLiteral("reference")}));

        // An imported run without traces is told where PKB's traces come from, not "--trace".
        view.set_data(std::make_shared<const RunData>(load_run(r.store.toStdString(), r.untraced)));
        QTRY_VERIFY_WITH_TIMEOUT(view.info_text().contains(QStringLiteral("--profile")), 5000);
        QVERIFY2(view.info_text().contains(QStringLiteral("import-pkb")) &&
                     !view.info_text().contains(QStringLiteral("--trace")),
                 qPrintable(view.info_text()));
        QVERIFY(!view.timeline()->trace());
    }
};

QTEST_MAIN(TestTrace)
#include "tst_trace.moc"
