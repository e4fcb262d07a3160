// `pkbw show --sweep ID` and its --json (engine/sweep/sweep_report.cpp) on a perf sweep whose pairs
// stored the pooled figures: fast_p counts a pair faster than p only when its interval clears p, and
// each timed pair's speedup is printed with its verdict.
#include "pkbw/core/store.h"
#include "pkbw/core/sweep_store.h"
#include "sweep_report.h"

#include <atomic>
#include <filesystem>
#include <gtest/gtest.h>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace pkbw;

namespace {

class SweepReportTest : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<int> counter{0};
        dir_ = fs::temp_directory_path() /
               ("pkbw_sweep_report_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
};

std::int64_t perf_run(Store& store, const std::string& problem, double speedup, std::optional<double> ci_low,
                      std::optional<double> ci_high, double verdict_code) {
    RunRecord run;
    run.problem_stem = problem;
    run.mode = RunMode::Perf;
    run.backend = "host";
    run.world_size = 2;
    const auto id = store.begin_run(run);
    store.add_perf_summary({id, Side::Candidate, -1, "speedup", speedup});
    if (ci_low)
        store.add_perf_summary({id, Side::Candidate, -1, "speedup_ci_low", *ci_low});
    if (ci_high)
        store.add_perf_summary({id, Side::Candidate, -1, "speedup_ci_high", *ci_high});
    store.add_perf_summary({id, Side::Candidate, -1, "verdict", verdict_code});
    store.finish_run(id, RunStatus::Pass, 0, "");
    return id;
}

TEST_F(SweepReportTest, FastPAndSpeedupsCarryTheVerdict) {
    const fs::path db = dir_ / "runs.db";
    std::int64_t sweep_id = 0;
    {
        Store store = Store::open(db);
        const std::vector<std::int64_t> runs = {
            perf_run(store, "1_allreduce", 1.3, 0.98, 1.7, 2),                   // ambiguous
            perf_run(store, "2_allgather", 1.31, 1.02, 1.6, 1),                  // faster
            perf_run(store, "3_broadcast", 1.12, std::nullopt, std::nullopt, 0), // stored before intervals
        };
        std::vector<SweepPair> pairs;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            SweepPair p;
            p.generation_label = "solutions_host_f32_none_a_b";
            p.problem_stem = store.get_run(runs[i])->problem_stem;
            p.solution_path = "/s/" + p.problem_stem + ".cpp";
            p.position = static_cast<int>(i);
            pairs.push_back(p);
        }
        SweepRecord s;
        s.mode = "perf";
        s.backend = "host";
        s.world_size = 2;
        sweep_id = create_sweep(store, s, pairs);
        for (std::size_t i = 0; i < runs.size(); ++i) {
            pairs[i].state = "done";
            pairs[i].run_id = runs[i];
            record_sweep_pair(store, sweep_id, pairs[i]);
        }
    }
    std::ostringstream out, err;
    ASSERT_EQ(cli::show_sweep_command(db, sweep_id, false, out, err), 0) << err.str();
    const std::string text = out.str();
    EXPECT_NE(text.find("1_allreduce  1.30x ambiguous (95% interval 0.980-1.700)"), std::string::npos)
        << text;
    EXPECT_NE(text.find("2_allgather  1.31x faster (95% interval 1.020-1.600)"), std::string::npos) << text;
    EXPECT_NE(text.find("3_broadcast  1.12x same"), std::string::npos) << text; // legacy code 0
    // fast_1: 2_allgather (interval clears 1) and the legacy 3_broadcast (1.12 > 1), not 1_allreduce.
    EXPECT_NE(text.find("  0.67  "), std::string::npos) << text;

    std::ostringstream json_out;
    ASSERT_EQ(cli::show_sweep_command(db, sweep_id, true, json_out, err), 0) << err.str();
    const auto json = nlohmann::json::parse(json_out.str());
    const auto& g = json["generations"][0];
    EXPECT_EQ(g["faster"], 1);
    EXPECT_NEAR(g["fast_p"]["0"].get<double>(), 1.0, 1e-12);
    EXPECT_NEAR(g["fast_p"]["1"].get<double>(), 2.0 / 3, 1e-12);
    EXPECT_NEAR(g["fast_p"]["1.5"].get<double>(), 0.0, 1e-12);
    EXPECT_EQ(g["verdicts"]["ambiguous"], 1);
    EXPECT_EQ(g["fast_bounds"].size(), 3u);
    const auto& pairs = json["pairs"];
    ASSERT_EQ(pairs.size(), 3u);
    EXPECT_EQ(pairs[0]["verdict"], "ambiguous");
    EXPECT_EQ(pairs[0]["ci_low"], 0.98);
    EXPECT_EQ(pairs[0]["ci_high"], 1.7);
    EXPECT_EQ(pairs[1]["verdict"], "faster");
    EXPECT_TRUE(pairs[2]["ci_low"].is_null());
    EXPECT_EQ(pairs[2]["verdict"], "same");
}

} // namespace
