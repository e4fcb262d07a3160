// `pkbw import-pkb` (engine/cli/import_pkb_command.cpp): a PKB logs folder stored as runs.
#include "import_pkb_command.h"
#include "pkbw/core/store.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
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

    EXPECT_EQ(run_import_pkb(store_path, (root_ / "nothing_here").string(), false), 1);
}

} // namespace
} // namespace pkbw
