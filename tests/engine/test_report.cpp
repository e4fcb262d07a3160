#include "run_progress.h"
#include "run_report.h"

#include <algorithm>
#include <chrono>
#include <gtest/gtest.h>
#include <sstream>
#include <thread>

using namespace pkbw::cli;
using nlohmann::json;

namespace {

json result(int rank, int trial, const std::string& status, const std::string& message = "") {
    return {{"event", "rank_result"}, {"rank", rank},       {"trial", trial},
            {"status", status},       {"message", message}, {"tensors", json::array()}};
}

LaunchOutcome completed(int world) {
    LaunchOutcome launch;
    for (int r = 0; r < world; ++r) {
        RankReport report;
        report.rank = r;
        report.phase = "exit";
        launch.ranks.push_back(report);
    }
    return launch;
}

} // namespace

TEST(Verdict, WorstStatusWinsWithItsTrialAndRank) {
    std::map<std::pair<int, int>, json> results = {
        {{0, 0}, result(0, 0, "pass")},
        {{0, 1}, result(1, 0, "mismatch", "output differs")},
        {{1, 0}, result(0, 1, "invalid_output", "wrote past output")},
        {{1, 1}, result(1, 1, "pass")}};
    Verdict v = decide(completed(2), results, 2, 2, true);
    EXPECT_EQ(v.status, "invalid_output");
    EXPECT_EQ(v.exit_code, 1);
    EXPECT_EQ(v.summary, "trial 1 rank 0: invalid_output: wrote past output");
    EXPECT_EQ(status_severity("crash"), status_severity("timeout"));
    EXPECT_GT(status_severity("timeout"), status_severity("compile_error"));
    EXPECT_GT(status_severity("compile_error"), status_severity("error"));
    EXPECT_GT(status_severity("error"), status_severity("invalid_output"));
    EXPECT_GT(status_severity("invalid_output"), status_severity("mismatch"));
    EXPECT_GT(status_severity("mismatch"), status_severity("pass"));
}

TEST(Verdict, EarlyStopAfterFailingTrialIsNotMissing) {
    std::map<std::pair<int, int>, json> results = {{{0, 0}, result(0, 0, "mismatch")},
                                                   {{0, 1}, result(1, 0, "pass")}};
    Verdict v = decide(completed(2), results, 2, 5, false);
    EXPECT_EQ(v.status, "mismatch");
    EXPECT_EQ(v.trials.size(), 1u);
}

TEST(Verdict, MissingResultIsError) {
    std::map<std::pair<int, int>, json> results = {{{0, 0}, result(0, 0, "pass")}};
    Verdict v = decide(completed(2), results, 2, 1, false);
    EXPECT_EQ(v.status, "error");
    EXPECT_EQ(v.summary, "rank 1 reported no result for trial 0");
}

TEST(Verdict, LauncherEndsMapToStatusAndExit) {
    auto launch = completed(2);
    launch.ranks[1].phase = "candidate";
    launch.culprit_ranks = {1};
    launch.message = "rank 1 crashed with SIGSEGV in phase candidate (trial 0)";
    std::map<std::pair<int, int>, json> none;
    struct Case {
        LaunchEnd end;
        std::string status;
        int exit;
    } cases[] = {{LaunchEnd::Crash, "crash", 1},
                 {LaunchEnd::Timeout, "timeout", 1},
                 {LaunchEnd::EnvironmentError, "error", 3},
                 {LaunchEnd::InternalError, "error", 1},
                 {LaunchEnd::Interrupted, "interrupted", 130},
                 {LaunchEnd::SpawnFailed, "error", 3}};
    for (const auto& c : cases) {
        launch.end = c.end;
        Verdict v = decide(launch, none, 2, 1, false);
        EXPECT_EQ(v.status, c.status) << launch_end_name(c.end);
        EXPECT_EQ(v.exit_code, c.exit) << launch_end_name(c.end);
        EXPECT_EQ(v.summary, launch.message);
    }
}

TEST(Verdict, FailureInTeardownAfterAllResultsIsAWarning) {
    auto launch = completed(2);
    launch.end = LaunchEnd::InternalError;
    launch.ranks[1].phase = "teardown";
    launch.culprit_ranks = {1};
    launch.message = "rank 1 exited with code 5 in phase teardown (trial 0): lost rank 0\nlast stderr";
    std::map<std::pair<int, int>, json> results = {{{0, 0}, result(0, 0, "pass")},
                                                   {{0, 1}, result(1, 0, "pass")}};
    Verdict v = decide(launch, results, 2, 1, false);
    EXPECT_EQ(v.status, "pass");
    EXPECT_EQ(v.exit_code, 0);
    EXPECT_EQ(v.summary,
              "1 trial(s) match on 2 rank(s); warning: rank 1 exited with code 5 in phase teardown "
              "(trial 0): lost rank 0");
    // Without every result it stays a failure.
    results.erase({0, 1});
    EXPECT_EQ(decide(launch, results, 2, 1, false).status, "error");
}

// The eval's per-rank lines mark a failing output whose judge classified it against tie rows, as
// pkbw show does: tie-explained when every mismatch is in a tie row, else not tie-explained.
TEST(Verdict, PerRankLinesMarkTieReports) {
    auto failing = [](int rank, bool explained) {
        json r = result(rank, 0, "mismatch", "output: tensors not allclose");
        r["tensors"] = json::array({{{"name", "output"},
                                     {"pass", false},
                                     {"shape_match", true},
                                     {"mismatch_count", 12},
                                     {"numel", 4096},
                                     {"ties",
                                      {{"classified", true},
                                       {"explained", explained},
                                       {"rows", json::array({3, 9})},
                                       {"rule", "2nd and 3rd equal"}}}}});
        return r;
    };
    std::map<std::pair<int, int>, json> results = {{{0, 0}, failing(0, true)}, {{0, 1}, failing(1, false)}};
    std::ostringstream out;
    print_trials(decide(completed(2), results, 1, 2, true), out);
    const std::string text = out.str();
    EXPECT_NE(text.find("rank 0: mismatch | output: 12/4096 mismatched"), std::string::npos) << text;
    const auto rank1 = text.find("rank 1: mismatch");
    ASSERT_NE(rank1, std::string::npos) << text;
    EXPECT_NE(text.substr(0, rank1).find("[tie-explained]"), std::string::npos) << text;
    EXPECT_NE(text.substr(rank1).find("[not tie-explained]"), std::string::npos) << text;
}

// NaN mismatches have no finite difference: the line says the worst ratio is infinite and why max_abs
// reads 0, and the warning says the reference has none (the CLI review's "max_abs 0 ... worst ratio -",
// "... where the reference's has fewer").
TEST(Verdict, NanMismatchesAreSaidNotShownAsZero) {
    auto nan_result = [](int rank) {
        json r = result(rank, 0, "mismatch", "output: tensors not allclose");
        r["tensors"] = json::array({{{"name", "output"},
                                     {"pass", false},
                                     {"shape_match", true},
                                     {"mismatch_count", 16},
                                     {"numel", 16},
                                     {"max_abs_error", 0.0},
                                     {"max_rel_error", 0.0},
                                     {"worst_ratio", nullptr},
                                     {"ref_summary", {{"nan_count", 0}, {"inf_count", 0}}},
                                     {"cand_summary", {{"nan_count", 16}, {"inf_count", 0}}}}});
        return r;
    };
    std::map<std::pair<int, int>, json> results = {{{0, 0}, nan_result(0)}, {{0, 1}, nan_result(1)}};
    const Verdict verdict = decide(completed(2), results, 1, 2, true);
    std::ostringstream out;
    print_trials(verdict, out);
    EXPECT_NE(
        out.str().find("max_abs 0, max_rel 0, worst ratio inf (16 NaN or Inf more than the reference's"),
        std::string::npos)
        << out.str();
    bool said = false;
    for (const auto& warning : output_statistics_warnings(verdict))
        said = said ||
               warning == "candidate output 'output' has 32 NaN on ranks 0, 1 where the reference's has none";
    EXPECT_TRUE(said);
}

// A run that reports nothing still says it runs (engine/run/run_progress.h): off a terminal a line
// naming rank 0's phase once per quiet interval, under --json a `progress` event of stage "waiting".
TEST(RunProgressTest, AQuietRunSaysWhereItWaits) {
    std::ostringstream out, err;
    pkbw::cli::RunProgress text(out, err, false, false, 2, 3, 1, true, 0.05);
    text.on_event(0, pkbw::protocol::Message{std::string(pkbw::protocol::kPhase),
                                             json{{"event", "phase"}, {"phase", "candidate"}, {"trial", 0}}});
    text.on_wait();
    EXPECT_EQ(err.str(), ""); // not quiet long enough yet
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
    text.on_wait();
    EXPECT_NE(err.str().find("[still running] rank 0 in phase candidate, nothing new for"), std::string::npos)
        << err.str();
    text.on_wait(); // just said: not again at once
    const std::string said = err.str();
    EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1);

    std::ostringstream json_out, json_err;
    pkbw::cli::RunProgress lines(json_out, json_err, true, false, 2, 3, 1, true, 0.05);
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
    lines.on_wait();
    const auto event = json::parse(json_out.str());
    EXPECT_EQ(event["event"], "progress");
    EXPECT_EQ(event["stage"], "waiting");
    EXPECT_GE(event["quiet_seconds"].get<double>(), 0.05);
    EXPECT_EQ(json_err.str(), "");
}
