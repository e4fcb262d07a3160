// PKB logs folders (scan, compare per trial and rank, perf JSON) and Kineto trace import.
#include "pkbw/core/error.h"
#include "pkbw/core/kineto.h"
#include "pkbw/core/pkb_logs.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace pkbw {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(PKBW_TORCH_PT_FIXTURES);

std::string perf_json(double ms) {
    return "{\n  \"wall_time_ms\": " + std::to_string(ms) +
           ",\n  \"wall_time_total_ms\": 50.0,\n  \"wall_time_std_ms\": 0.01,\n  \"min_time_ms\": 0.25,\n"
           "  \"max_time_ms\": 2.0,\n  \"iterations\": 100.0,\n  \"warmup_iterations\": 500.0,\n"
           "  \"num_input_groups\": 13.0,\n  \"l2_cache_size_bytes\": 52428800.0,\n"
           "  \"timed_tensor_bytes\": 2097152.0\n}";
}

class PkbLogsTest : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() / ("pkbw_pkb_logs_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_);
    }
    void TearDown() override { fs::remove_all(root_); }

    void pt(const fs::path& dir, int rank, const std::string& fixture) {
        fs::create_directories(root_ / dir);
        fs::copy_file(kFixtures / (fixture + ".pt"), root_ / dir / ("rank_" + std::to_string(rank) + ".pt"));
    }
    void text(const fs::path& file, const std::string& content) {
        fs::create_directories((root_ / file).parent_path());
        std::ofstream(root_ / file) << content;
    }
    fs::path root_;
};

TEST_F(PkbLogsTest, EvalAndDryrunLayoutsBecomeRunsWithComparisonsAndPerf) {
    const fs::path p = "problem_1_allreduce";
    // eval trial 0: rank 1 of the candidate differs (f32 values vs a transposed arange) -> mismatch.
    pt(p / "reference/trial_0", 0, "f32");
    pt(p / "reference/trial_0", 1, "slice_2d");
    pt(p / "cuda/trial_0", 0, "f32");
    pt(p / "cuda/trial_0", 1, "slice_step");
    // trial 1: identical.
    pt(p / "reference/trial_1", 0, "pkb_tuple");
    pt(p / "cuda/trial_1", 0, "pkb_tuple");
    text(p / "reference/trial_1/rank_0_perf.json", perf_json(1.2));
    text(p / "cuda/trial_1/rank_0_perf.json", perf_json(0.6));
    text(p / "cuda/trial_1/traces/rank_0.json", R"({"traceEvents": []})");
    // a dryrun download of the candidate, beside them (PKB does not clear it).
    pt(p / "cuda", 0, "bf16");
    text(p / "comparison_cuda.json", "{}");

    const PkbLogs logs = scan_pkb_logs(root_);
    ASSERT_EQ(logs.runs.size(), 2u);
    const PkbRun& dry = logs.runs[0];
    EXPECT_EQ(dry.problem_stem, "1_allreduce");
    EXPECT_EQ(dry.problem_id, 1);
    EXPECT_EQ(dry.backend, "cuda");
    EXPECT_FALSE(dry.eval);
    ASSERT_EQ(dry.trials.size(), 1u);
    EXPECT_EQ(compare_pkb_trial(dry.trials[0]).result, "missing_artifacts"); // no reference dryrun

    const PkbRun& eval = logs.runs[1];
    EXPECT_TRUE(eval.eval);
    EXPECT_EQ(eval.world_size, 2);
    ASSERT_EQ(eval.trials.size(), 2u);
    const auto t0 = compare_pkb_trial(eval.trials[0]);
    EXPECT_EQ(t0.result, "tensor_mismatch");
    ASSERT_EQ(t0.ranks.size(), 2u);
    EXPECT_TRUE(t0.ranks[0].comparison.pass);
    EXPECT_FALSE(t0.ranks[1].comparison.pass);
    EXPECT_NE(t0.first_error.find("rank_1.pt"), std::string::npos) << t0.first_error;

    const auto t1 = compare_pkb_trial(eval.trials[1]);
    EXPECT_EQ(t1.result, "match");
    ASSERT_TRUE(eval.trials[1].candidate->ranks[0].trace.has_value());

    const auto perf = summarize_pkb_perf(eval.trials[1]);
    ASSERT_TRUE(perf.speedup.has_value());
    EXPECT_DOUBLE_EQ(*perf.speedup, 2.0);
    ASSERT_TRUE(perf.candidate.ranks[0].has_value());
    EXPECT_DOUBLE_EQ(perf.candidate.ranks[0]->num_input_groups, 13.0);
    EXPECT_DOUBLE_EQ(perf.candidate.ranks[0]->l2_cache_size_bytes, 52428800.0);
    EXPECT_FALSE(summarize_pkb_perf(eval.trials[0]).speedup.has_value());
}

TEST_F(PkbLogsTest, RankCountsAndBrokenFilesAreReportedNotThrown) {
    const fs::path p = "problem_12_gather";
    pt(p / "reference/trial_0", 0, "f32");
    pt(p / "reference/trial_0", 1, "f32");
    pt(p / "triton/trial_0", 0, "f32");
    pt(p / "reference/trial_1", 0, "f32");
    text(p / "triton/trial_1/rank_0.pt", "not a zip");
    text(p / "triton/trial_1/rank_0_perf.json", "{\"wall_time_ms\": \"fast\"}");
    text(p / "reference/trial_1/rank_0_perf.json", perf_json(1.0));

    const PkbLogs logs = scan_pkb_logs(root_ / p); // a problem folder directly
    ASSERT_EQ(logs.runs.size(), 1u);
    const auto& run = logs.runs[0];
    EXPECT_EQ(run.backend, "triton");
    EXPECT_EQ(compare_pkb_trial(run.trials[0]).result, "path_mismatch");
    const auto t1 = compare_pkb_trial(run.trials[1]);
    EXPECT_EQ(t1.result, "load_error");
    EXPECT_NE(t1.first_error.find("triton/trial_1/rank_0.pt"), std::string::npos) << t1.first_error;
    const auto perf = summarize_pkb_perf(run.trials[1]);
    ASSERT_EQ(perf.candidate.errors.size(), 1u);
    EXPECT_NE(perf.candidate.errors[0].find("'wall_time_ms' is not a number"), std::string::npos);
    EXPECT_FALSE(perf.speedup.has_value());

    EXPECT_THROW(scan_pkb_logs(root_ / p / "reference"), FormatError); // no problem_ folders
}

TEST(PkbPerf, FieldsAndErrors) {
    const auto perf = parse_pkb_perf(perf_json(0.75), "rank_0_perf.json");
    EXPECT_DOUBLE_EQ(perf.wall_time_ms, 0.75);
    EXPECT_DOUBLE_EQ(perf.wall_time_std_ms, 0.01);
    EXPECT_DOUBLE_EQ(perf.iterations, 100.0);
    EXPECT_DOUBLE_EQ(perf.warmup_iterations, 500.0);
    EXPECT_DOUBLE_EQ(perf.timed_tensor_bytes, 2097152.0);
    try {
        parse_pkb_perf("{\"iterations\": 100}", "x/rank_3_perf.json");
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_STREQ(e.what(), "x/rank_3_perf.json: field 'wall_time_ms' is missing");
    }
    EXPECT_THROW(parse_pkb_perf("{\"wall_time_ms\": 1", "f"), FormatError);
    EXPECT_THROW(parse_pkb_perf("[1]", "f"), FormatError);
}

TEST(Kineto, CompleteEventsWithGpuStreamsAndNames) {
    const std::string trace = R"json({
      "schemaVersion": 1,
      "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
      "baseTimeNanoseconds": 1700000000000000000,
      "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 1234, "tid": 1234, "args": {"name": "python"}},
        {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "ts": 100.5, "dur": 20.25,
         "args": {"device": 0, "stream": 7, "correlation": 42, "grid": [4, 1, 1]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1234, "tid": 1234, "ts": 95,
         "dur": 3, "args": {"correlation": 42}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": "stream 9",
         "ts": 130, "dur": 1.5, "args": {"device": 0, "stream": 9, "bytes": 4096}},
        {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "ts": 140, "dur": 10,
         "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "user_annotation", "name": "solution", "pid": 1234, "tid": 1234, "ts": 90, "dur": 70},
        {"ph": "s", "cat": "ac2g", "id": 42, "pid": 1234, "tid": 1234, "ts": 95},
        {"ph": "i", "name": "Iteration Start", "pid": 1234, "tid": 1234, "ts": 80, "s": "g"}
      ]})json";
    const KinetoTrace t = parse_kineto_trace(trace, "rank_1.json", 1);
    EXPECT_EQ(t.rank, 1);
    ASSERT_EQ(t.events.size(), 5u);
    EXPECT_EQ(t.other_events, 2u);
    EXPECT_EQ(t.names.at("process:0"), "GPU 0");
    EXPECT_EQ(t.names.at("thread:1234:1234"), "python");
    const std::int64_t base = 1700000000000000000;
    EXPECT_EQ(t.events[0].name, "solution"); // sorted by start
    EXPECT_EQ(t.events[0].on_gpu(), false);
    const KinetoEvent& k = t.events[2];
    EXPECT_EQ(k.name, "ncclKernel_AllReduce");
    EXPECT_EQ(k.start_ns, base + 100500);
    EXPECT_EQ(k.end_ns, base + 120750);
    EXPECT_EQ(k.stream, 7);
    EXPECT_EQ(k.device, 0);
    EXPECT_EQ(k.correlation, 42);
    EXPECT_EQ(k.args["grid"][0], 4);
    EXPECT_EQ(t.events[1].correlation, 42); // the launch
    const KinetoEvent& copy = t.events[3];
    EXPECT_EQ(copy.category, "gpu_memcpy");
    EXPECT_EQ(copy.tid, -1); // text tid
    EXPECT_EQ(copy.stream, 9);
    EXPECT_EQ(copy.duration_ns(), 1500);

    const auto totals = kineto_kernel_totals(t);
    ASSERT_EQ(totals.size(), 1u);
    EXPECT_EQ(totals[0].count, 2);
    EXPECT_EQ(totals[0].total_ns, 30250);
}

TEST(Kineto, MalformedTracesNameTheFileAndEvent) {
    auto error = [](const std::string& text) {
        try {
            parse_kineto_trace(text, "traces/rank_0.json");
        } catch (const FormatError& e) {
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    EXPECT_EQ(error("{\"traceEvents\": [1]}"), "traces/rank_0.json: traceEvents[0] is not an object");
    EXPECT_EQ(error(R"({"traceEvents": [{"ph": "X", "name": "k"}]})"),
              "traces/rank_0.json: traceEvents[0]: 'ts' is missing or not a number");
    EXPECT_EQ(error(R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": -2}]})"),
              "traces/rank_0.json: traceEvents[0]: negative 'dur'");
    EXPECT_NE(error("{\"traceEvents\": [").find("not valid JSON"), std::string::npos);
    EXPECT_NE(error("{}").find("no 'traceEvents' array"), std::string::npos);
}

TEST_F(PkbLogsTest, KinetoRankFromFileName) {
    text("traces/rank_3.json",
         R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,
        "pid": 0, "tid": 7}]})");
    const auto t = read_kineto_trace(root_ / "traces/rank_3.json");
    EXPECT_EQ(t.rank, 3);
    ASSERT_EQ(t.events.size(), 1u);
    EXPECT_EQ(t.events[0].stream, 7); // no args: the GPU row's tid is the stream
    EXPECT_EQ(t.events[0].device, 0);
    EXPECT_THROW(read_kineto_trace(root_ / "missing.json"), FormatError);
}

// A Kineto profile (baseTimeNanoseconds set) of `steps` iterations of 40 us, 50 us apart, from `at_us`.
std::string kineto_profile(std::int64_t base_ns, int at_us, int steps) {
    std::string events;
    for (int i = 0; i < steps; ++i) {
        const int ts = at_us + 50 * i;
        events +=
            std::string(i ? "," : "") + R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" +
            std::to_string(i) + R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(ts) +
            R"(, "dur": 40}, {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#)" +
            std::to_string(i) + R"(", "pid": 0, "tid": 7, "ts": )" + std::to_string(ts + 2) +
            R"(, "dur": 36, "args": {"device": 0, "stream": 7}}, {"ph": "X", "cat": "kernel", "name": "k",
                  "pid": 0, "tid": 7, "ts": )" +
            std::to_string(ts + 5) + R"(, "dur": 30, "args": {"device": 0, "stream": 7}})";
    }
    return R"({"baseTimeNanoseconds": )" + std::to_string(base_ns) + R"(, "traceEvents": [)" + events + "]}";
}

struct Span {
    std::int64_t begin = 0, end = 0;
};
// The phase range of `side` in a converted rank trace, and how many iterations that side has.
Span phase_of(const RankTrace& t, const std::string& side, int* iterations = nullptr) {
    Span span{-1, -1};
    int count = 0;
    for (const auto& e : t.events) {
        if (e.kind == TraceEventKind::EngineRange && e.category == "phase" && e.name == side)
            span = {e.start_ns, e.end_ns};
        count += e.kind == TraceEventKind::EngineRange && e.category == "iteration" &&
                 e.name.starts_with(side + "/");
    }
    if (iterations)
        *iterations = count;
    return span;
}

TEST(Kineto, SidesArePlacedEndToEndEachKeepingItsOwnTiming) {
    // The reference on two ranks of one launch (one clock: rank 1 starts 30 us later), the candidate in
    // a launch 72 s later, as PKB's run_local.py records them.
    const std::int64_t base = 1700000000000000000, later = base + 72'000'000'000;
    std::vector<SideProfile> profiles = {
        {"candidate", 0, parse_kineto_trace(kineto_profile(later, 100, 2), "c0", 0)},
        {"reference", 0, parse_kineto_trace(kineto_profile(base, 1000, 3), "r0", 0)},
        {"reference", 0, parse_kineto_trace(kineto_profile(base, 1030, 3), "r1", 1)},
        {"candidate", 0, parse_kineto_trace(kineto_profile(later, 110, 2), "c1", 1)},
    };
    const auto traces = profiles_end_to_end(profiles);
    ASSERT_EQ(traces.size(), 2u);
    EXPECT_EQ(traces[0].rank, 0);
    EXPECT_EQ(traces[1].rank, 1);
    int iterations = 0;
    const Span r0 = phase_of(traces[0], "reference", &iterations);
    EXPECT_EQ(iterations, 3); // the GPU copy of each step is not a second iteration
    const Span r1 = phase_of(traces[1], "reference");
    const Span c0 = phase_of(traces[0], "candidate", &iterations);
    EXPECT_EQ(iterations, 2);
    const Span c1 = phase_of(traces[1], "candidate");
    // The reference keeps its clock and its ranks' offset.
    EXPECT_EQ(r0.begin, base + 1'000'000);
    EXPECT_EQ(r1.begin - r0.begin, 30'000);
    // The candidate starts after the reference's last rank ends, by the gap (at least 1 us), its ranks
    // 10 us apart as recorded, each side as long as it was.
    const std::int64_t reference_end = std::max(r0.end, r1.end);
    EXPECT_EQ(reference_end, base + 1'030'000 + 140'000);
    EXPECT_GE(c0.begin - reference_end, 1000);
    EXPECT_LT(c0.begin - reference_end, 10'000);
    EXPECT_EQ(c1.begin - c0.begin, 10'000);
    EXPECT_EQ(c0.end - c0.begin, 90'000);
    EXPECT_TRUE(profiles_placed_end_to_end(traces));
    RankTrace plain;
    append_kineto_events(profiles[1].trace, "reference", 0, plain);
    EXPECT_FALSE(profiles_placed_end_to_end({plain}));
}

TEST(Kineto, ProfilesWithoutABaseTimeStartEachRankAtTheSidesStart) {
    // torch without Kineto writes a bare array, each process counting from its own profile's start.
    const std::string legacy0 = R"([{"name": "ProfilerStep#0", "ph": "X", "ts": 200, "dur": 50, "tid": 1,
        "pid": "CPU functions", "args": {}}, {"name": "aten::add", "ph": "X", "ts": 210, "dur": 5, "tid": 1,
        "pid": "CPU functions", "args": {}}])";
    const std::string legacy1 = R"([{"name": "ProfilerStep#0", "ph": "X", "ts": 900, "dur": 20, "tid": 1,
        "pid": "CPU functions", "args": {}}])";
    const KinetoTrace t0 = parse_kineto_trace(legacy0, "legacy0", 0);
    EXPECT_EQ(t0.base_time_ns, 0);
    ASSERT_EQ(t0.events.size(), 2u);
    EXPECT_EQ(t0.events[0].pid, -1); // a text pid
    const auto traces = profiles_end_to_end({{"reference", 0, parse_kineto_trace(legacy0, "r0", 0)},
                                             {"reference", 0, parse_kineto_trace(legacy1, "r1", 1)},
                                             {"candidate", 0, parse_kineto_trace(legacy1, "c0", 0)},
                                             {"candidate", 0, parse_kineto_trace(legacy0, "c1", 1)}});
    ASSERT_EQ(traces.size(), 2u);
    const Span r0 = phase_of(traces[0], "reference"), r1 = phase_of(traces[1], "reference");
    const Span c0 = phase_of(traces[0], "candidate"), c1 = phase_of(traces[1], "candidate");
    EXPECT_EQ(r0.begin, 200'000);
    EXPECT_EQ(r1.begin, 200'000); // moved from 900 us: its clock is its own
    EXPECT_EQ(c0.begin, c1.begin);
    EXPECT_EQ(c0.begin, 250'000 + 1000); // after the longer reference rank, the 1 us minimum gap
    EXPECT_EQ(c1.end - c1.begin, 50'000);
}

TEST_F(PkbLogsTest, ProfilerDirectoryOfPythonRanksReadsBothSidesAndNamesABadFile) {
    const std::int64_t base = 1700000000000000000;
    text("trace/rank_0.reference.torch.json", kineto_profile(base, 0, 2));
    text("trace/candidate/rank_0.candidate.torch.json", kineto_profile(base + 5'000'000'000, 0, 2));
    text("trace/rank_0.events.jsonl", "{}"); // not a profile
    text("trace/rank_0.engine.jsonl", "not read here");
    const auto traces = load_profiler_directory(root_ / "trace");
    ASSERT_EQ(traces.size(), 1u);
    int iterations = 0;
    phase_of(traces[0], "reference", &iterations);
    EXPECT_EQ(iterations, 2);
    const Span c = phase_of(traces[0], "candidate", &iterations);
    EXPECT_EQ(iterations, 2);
    EXPECT_LT(c.begin, base + 1'000'000'000); // placed after the reference, not 5 s later
    EXPECT_TRUE(load_profiler_directory(root_ / "nothing").empty());

    text("trace/candidate/rank_1.candidate.torch.json", "{\"traceEvents\": [");
    try {
        load_profiler_directory(root_ / "trace");
        FAIL() << "a truncated profile was accepted";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("rank_1.candidate.torch.json"), std::string::npos) << e.what();
    }
    // As the launcher reads them: the bad file (the candidate's process wrote it) is left out and
    // named, and the others are kept.
    std::vector<std::string> skipped;
    const auto kept = load_profiler_directory(root_ / "trace", &skipped);
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].rank, 0);
    ASSERT_EQ(skipped.size(), 1u);
    EXPECT_NE(skipped[0].find("rank_1.candidate.torch.json"), std::string::npos) << skipped[0];
}

} // namespace
} // namespace pkbw
