// `pkbw import-pkb` (engine/run/pkb_import.cpp): a PKB logs folder stored as runs.
#include "pkb_import.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/store.h"
#include "pkbw/core/trace_store.h"
#include "store_recorder.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <unistd.h>

namespace pkbw {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(PKBW_TORCH_PT_FIXTURES);

class ImportPkbTest : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() / ("pkbw_import_pkb_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(root_);
        fs::create_directories(root_);
    }
    void TearDown() override { fs::remove_all(root_); }
    void pt(const fs::path& dir, int rank, const std::string& fixture) {
        fs::create_directories(root_ / dir);
        fs::copy_file(kFixtures / (fixture + ".pt"), root_ / dir / ("rank_" + std::to_string(rank) + ".pt"));
    }
    void perf(const fs::path& dir, int rank, double ms) {
        std::ofstream(root_ / dir / ("rank_" + std::to_string(rank) + "_perf.json"))
            << "{\"wall_time_ms\": " << ms << ", \"wall_time_std_ms\": 0.5, \"iterations\": 100.0}";
    }
    fs::path root_;
};

TEST_F(ImportPkbTest, EvalTrialsBecomeOneRunWithRanksTensorsPerfAndArtifacts) {
    const fs::path logs = "logs";
    const fs::path p = logs / "problem_2_all_gather";
    for (int r = 0; r < 2; ++r) {
        pt(p / "reference/trial_0", r, "f32");
        pt(p / "cuda/trial_0", r, "f32");
        pt(p / "reference/trial_1", r, "pkb_tuple");
        pt(p / "cuda/trial_1", r, r == 0 ? "pkb_tuple" : "pkb_dict");
        perf(p / "reference/trial_0", r, 2.0 + r);
        perf(p / "cuda/trial_0", r, 1.0 + r * 0.5);
    }
    const std::string store_path = (root_ / "runs.sqlite").string();
    ASSERT_EQ(run_import_pkb(store_path, (root_ / logs).string(), true), 0);

    Store store = Store::open_read_only(store_path);
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    const RunRecord& run = runs[0];
    EXPECT_EQ(run.backend, "pkb-cuda");
    EXPECT_EQ(run.problem_stem, "2_all_gather");
    EXPECT_EQ(run.problem_id, 2);
    EXPECT_EQ(run.mode, RunMode::Eval);
    EXPECT_EQ(run.world_size, 2);
    EXPECT_EQ(run.trials, 2);
    EXPECT_EQ(run.status, RunStatus::Mismatch); // trial 1 rank 1: different keys
    EXPECT_NE(run.summary.find("1/2 trials match"), std::string::npos) << run.summary;
    EXPECT_NE(run.summary.find("speedup 2.000x (trial 0)"), std::string::npos) << run.summary;

    const auto ranks = store.rank_results(run.id);
    ASSERT_EQ(ranks.size(), 8u); // 2 trials x 2 ranks x 2 sides
    int mismatches = 0;
    for (const auto& r : ranks) {
        mismatches += r.outcome == RankOutcome::Mismatch;
        if (r.trial == 1 && r.rank == 1 && r.side == Side::Candidate) {
            EXPECT_EQ(r.outcome, RankOutcome::Mismatch);
        }
    }
    EXPECT_EQ(mismatches, 1);
    const auto tensors = store.tensor_results(run.id, false);
    EXPECT_GE(tensors.size(), 2u + 4u); // f32 per rank in trial 0, then pkb_tuple's 4 tensors on rank 0

    std::map<std::string, double> stats;
    for (const auto& s : store.perf_summaries(run.id)) {
        stats[std::string(to_string(s.side)) + ":" + std::to_string(s.rank) + ":" + s.statistic] = s.value;
    }
    EXPECT_DOUBLE_EQ(stats.at("reference:-1:pkb_wall_time_ms_max.trial_0"), 3.0);
    EXPECT_DOUBLE_EQ(stats.at("candidate:-1:pkb_wall_time_ms_max.trial_0"), 1.5);
    EXPECT_DOUBLE_EQ(stats.at("candidate:-1:pkb_speedup.trial_0"), 2.0);
    EXPECT_DOUBLE_EQ(stats.at("candidate:-1:pkb_speedup"), 2.0);
    EXPECT_DOUBLE_EQ(stats.at("candidate:1:pkb_wall_time_ms"), 1.5);
    EXPECT_DOUBLE_EQ(stats.at("reference:0:pkb_iterations"), 100.0);

    EXPECT_EQ(store.artifacts(run.id).size(), 8u + 4u); // 8 .pt and 4 perf files

    // A second import of the same folder adds nothing.
    ASSERT_EQ(run_import_pkb(store_path, (root_ / logs).string(), false), 0);
    EXPECT_EQ(Store::open_read_only(store_path).count_runs(), 1);
}

TEST_F(ImportPkbTest, UnpairedDryrunAndBadFolders) {
    const fs::path p = "solutions_cuda_bf16_none_anthropic_claude-opus-4-7/logs/problem_5_scatter";
    pt(p / "cuda", 0, "bf16");
    const std::string store_path = (root_ / "runs.sqlite").string();
    ASSERT_EQ(run_import_pkb(store_path, (root_ / p).string(), false), 0);
    Store store = Store::open_read_only(store_path);
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].mode, RunMode::Dryrun);
    EXPECT_EQ(runs[0].generation.model, "claude-opus-4-7");
    EXPECT_NE(runs[0].summary.find("outputs not compared"), std::string::npos) << runs[0].summary;
    const auto ranks = store.rank_results(runs[0].id);
    ASSERT_EQ(ranks.size(), 1u);
    EXPECT_EQ(ranks[0].outcome, RankOutcome::Skipped);

    EXPECT_EQ(run_import_pkb(store_path, (root_ / "nothing_here").string(), false), 2); // usage, as elsewhere
}

// What PKB's run_local.py --download --profile --measure-perf leaves for an eval of two trials
// (run_eval_single_problem, scripts/worker.py): per side and trial, rank_<r>.pt, rank_<r>_perf.json and
// traces/rank_<r>.json, a torch-profiler chrome trace with ProfilerStep#N annotations and kernels.
class ImportPkbProfileTest : public ImportPkbTest {
protected:
    void profile(const fs::path& dir, int rank, std::int64_t base_us, const std::string& kernel) {
        fs::create_directories(root_ / dir / "traces");
        std::ofstream(root_ / dir / "traces" / ("rank_" + std::to_string(rank) + ".json"))
            << R"({"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000, "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": )"
            << base_us << R"(, "dur": 40},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": )"
            << base_us + 50 << R"(, "dur": 40},
  {"ph": "X", "cat": "kernel", "name": ")"
            << kernel << R"(", "pid": 0, "tid": 7, "ts": )" << base_us + 5
            << R"(, "dur": 12, "args": {"device": 0, "stream": 7, "correlation": 11, "grid": [4, 1, 1],
    "block": [256, 1, 1], "registers per thread": 32, "shared memory": 0}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "pid": 0, "tid": 7, "ts": )"
            << base_us + 55 << R"(, "dur": 20, "args": {"device": 0, "stream": 7}}
]})";
    }
};

TEST_F(ImportPkbProfileTest, ProfiledEvalKeepsOutputsTracesSpeedupSpreadAndGeneration) {
    const fs::path p = fs::path("logs") / "problem_2_allgather";
    for (int trial = 0; trial < 2; ++trial) {
        const std::string t = "trial_" + std::to_string(trial);
        pt(p / "reference" / t, 0, "f32");
        pt(p / "cuda" / t, 0, "f32");
        // PKB's own timings of two identical trials: 1.44x, then 0.665x.
        perf(p / "reference" / t, 0, trial == 0 ? 1.44 : 0.665);
        perf(p / "cuda" / t, 0, 1.0);
        profile(p / "reference" / t, 0, 1000 + 10000 * trial, "concat_k");
        profile(p / "cuda" / t, 0, 5000 + 10000 * trial, "push_shard");
    }
    const std::string store_path = (root_ / "store" / "runs.db").string();
    ASSERT_EQ(run_import_pkb(store_path, (root_ / "logs").string(), false,
                             "solutions_cuda_bf16_h200_2_anthropic_claude-opus-4-7"),
              0);
    Store store = Store::open_read_only(store_path);
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    const RunRecord& run = runs[0];
    EXPECT_EQ(run.generation.label, "solutions_cuda_bf16_h200_2_anthropic_claude-opus-4-7");
    EXPECT_EQ(run.generation.model, "claude-opus-4-7");
    EXPECT_TRUE(run.generation.parsed);
    EXPECT_NE(run.summary.find("speedup 1.440x (trial 0), 0.665x (trial 1)"), std::string::npos)
        << run.summary;

    // The .pt outputs under the kinds the heatmaps read, per side, and present on disk.
    int reference_outputs = 0, candidate_outputs = 0;
    for (const auto& a : store.artifacts(run.id)) {
        reference_outputs += a.kind == "outputs_reference";
        candidate_outputs += a.kind == "outputs_candidate";
        if (a.kind.starts_with("outputs_")) {
            EXPECT_TRUE(fs::exists(a.path)) << a.path;
            EXPECT_TRUE(a.trial && a.rank) << a.kind;
        }
    }
    EXPECT_EQ(reference_outputs, 2);
    EXPECT_EQ(candidate_outputs, 2);
    // What the heatmaps call: the .pt of trial 1, rank 0, candidate, read as an output set.
    const fs::path cand_pt = find_output_file(store, run.id, 1, 0, Side::Candidate);
    EXPECT_EQ(cand_pt.filename(), "rank_0.pt");
    EXPECT_NE(cand_pt.string().find("cuda/trial_1"), std::string::npos) << cand_pt;
    EXPECT_FALSE(read_output_file(cand_pt).tensors.empty());
    EXPECT_TRUE(find_output_file(store, run.id, 5, 0, Side::Candidate).empty());

    std::map<std::string, double> stats;
    for (const auto& s : store.perf_summaries(run.id))
        stats[s.statistic] = s.value;
    EXPECT_DOUBLE_EQ(stats.at("pkb_speedup_min"), 0.665);
    EXPECT_DOUBLE_EQ(stats.at("pkb_speedup_max"), 1.44);

    // The profiler's traces are the run's trace: both sides of trial 0 on rank 0's timeline.
    ASSERT_EQ(traced_ranks(store, run.id), std::vector<int>{0});
    const auto traces = load_run_traces(store, run.id);
    ASSERT_EQ(traces.size(), 1u);
    std::map<std::string, int> seen;
    for (const auto& e : traces[0].events) {
        if (e.kind == TraceEventKind::Kernel)
            ++seen["kernel " + e.name];
        if (e.kind == TraceEventKind::EngineRange)
            ++seen[e.category + " " + e.name];
    }
    EXPECT_EQ(seen["kernel concat_k"], 1);
    EXPECT_EQ(seen["kernel push_shard"], 1);
    EXPECT_EQ(seen["phase reference"], 1);
    EXPECT_EQ(seen["phase candidate"], 1);
    EXPECT_EQ(seen["iteration candidate/1"], 1);
    // PKB profiled the sides in two launches: the candidate is placed right after the reference.
    std::int64_t reference_end = -1, candidate_begin = -1;
    for (const auto& e : traces[0].events) {
        if (e.kind == TraceEventKind::EngineRange && e.category == "phase") {
            EXPECT_EQ(e.payload.value("placed", ""), "end to end") << e.name;
            (e.name == "reference" ? reference_end : candidate_begin) =
                e.name == "reference" ? e.end_ns : e.start_ns;
        }
    }
    EXPECT_GE(candidate_begin - reference_end, 1000);
    EXPECT_LT(candidate_begin - reference_end, 5000);

    // `pkbw show`: each rank once per trial, with both sides on its line, and every trial's speedup.
    std::ostringstream out, err;
    ASSERT_EQ(cli::show_run(store_path, run.id, false, out, err), 0) << err.str();
    const std::string text = out.str();
    std::size_t lines = 0;
    for (std::size_t at = text.find("    rank 0:"); at != std::string::npos;
         at = text.find("    rank 0:", at + 1))
        ++lines;
    EXPECT_EQ(lines, 2u) << text;
    EXPECT_NE(text.find("rank 0: reference ok, candidate ok"), std::string::npos) << text;
    EXPECT_NE(text.find("PKB speedup per trial: trial_0 1.44x, trial_1 0.665x"), std::string::npos) << text;
}

} // namespace
} // namespace pkbw
