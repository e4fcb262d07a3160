// Issue 16 end to end: a real eval on the host backend (pkbw_test_tie_rank, the rank program with the
// test-only top-2 problem of tie_problem.cpp) whose candidate breaks top-2 ties the other way. The
// mismatch is tie-explained in the rank's event, the store, the run summary and `pkbw show` (text and
// JSON); a candidate that is also wrong elsewhere is not.
#include "pkbw/core/store.h"
#include "recorder.h"
#include "run.h"
#include "signals.h"
#include "store_recorder.h"
#include "test_helpers.h"
#include "tie_problem.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

namespace fs = std::filesystem;
using namespace pkbw::cli;

namespace {

// The candidate: the reference's rule except that a tie for 2nd place goes to the higher index.
// `extra` runs after it (to be wrong elsewhere too).
std::string candidate(const std::string& extra = "") {
    return R"(#include "pkbw/solution.h"
extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const float* in = ctx.input(0).as<float>();
    float* out = ctx.output(0).as<float>();
    for (long long t = 0; t < ctx.input(0).shape[0]; ++t) {
        int first = 0, second = -1;
        for (int e = 1; e < 4; ++e)
            if (in[t * 4 + e] > in[t * 4 + first]) first = e;
        for (int e = 0; e < 4; ++e)
            if (e != first && (second < 0 || in[t * 4 + e] >= in[t * 4 + second])) second = e;
        for (int e = 0; e < 4; ++e)
            out[t * 4 + e] = (e == first || e == second) ? in[t * 4 + e] : 0.0f;
    }
)" + extra +
           R"(
    return 0;
}
)";
}

class TieEval : public ::testing::Test {
protected:
    void SetUp() override {
        // A data root of the test's own: the source tree's headers and the test problem's reference.
        const fs::path source = PKBW_TEST_SOURCE_ROOT;
        fs::create_directories(dir.path() / "data");
        for (const char* part : {"abi", "core", "toolkit"})
            fs::create_directory_symlink(source / part, dir.path() / "data" / part);
        dir.write(std::string("data/problems/") + pkbw::test::kTieProblemStem + "/reference_host.cpp",
                  pkbw::test::kTieReferenceSource);
        ::setenv("PKBW_DATA_DIR", (dir.path() / "data").c_str(), 1);
    }
    void TearDown() override { ::unsetenv("PKBW_DATA_DIR"); }

    // Evaluates `source` at W=2 with M=6 (tie rows 1 and 4 on every rank) into the test's store; `perf`
    // times it (short blocks) and re-checks it after timing.
    int eval(const std::string& source, bool perf = false) {
        RunOptions o;
        o.problem = std::to_string(pkbw::test::kTieProblemId);
        o.solution = dir.write(std::string("solutions_host_f32_none_samples_test/") +
                                   pkbw::test::kTieProblemStem + "_host.cpp",
                               source)
                         .string();
        o.nproc = 2;
        o.trials = 2;
        o.m = 6;
        o.n = 4;
        o.dtype = "f32";
        o.backend = "host";
        o.cache_dir = dir.path() / "cache";
        o.runs_dir = dir.path() / "runs";
        o.rank_program = PKBW_TIE_RANK_PROGRAM;
        o.command_line = {"pkbw", perf ? "perf" : "eval", "(test)"};
        if (perf) {
            o.mode = "perf";
            o.perf = true;
            o.trials = 1;
            o.perf_options = {
                {"pkb_warmup", 1}, {"pkb_iterations", 2}, {"warmup", 1}, {"pairs", 1}, {"iterations", 2}};
        }
        auto recorder = open_store_recorder(store());
        out.str("");
        err.str("");
        return execute_run(o, *recorder, out, err);
    }
    fs::path store() const { return dir.path() / "store" / "runs.db"; }
    std::string show(std::int64_t run, bool as_json) {
        std::ostringstream text, errors;
        EXPECT_EQ(show_run(store(), run, as_json, text, errors), 0) << errors.str();
        return text.str();
    }

    pkbw::test::TempDir dir;
    SignalScope signals;
    std::ostringstream out, err;
};

const std::string kRule = "top-2 of 4 scores: 2nd and 3rd equal";

} // namespace

TEST_F(TieEval, MismatchConfinedToTieRowsIsTieExplained) {
    ASSERT_EQ(eval(candidate()), 1) << out.str() << err.str();
    const std::string explained =
        "tie-explained: all 4 mismatched elements are in 2 of the 2 tie rows (" + kRule + ")";
    EXPECT_NE(out.str().find(explained), std::string::npos) << out.str(); // the run's summary

    auto store = pkbw::Store::open_read_only(this->store());
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].status, pkbw::RunStatus::Mismatch); // still a failure
    EXPECT_NE(runs[0].summary.find(explained), std::string::npos) << runs[0].summary;
    const auto tensors = store.tensor_results(runs[0].id, false);
    ASSERT_EQ(tensors.size(), 2u); // trial 0 on two ranks; the run stops at the first mismatch
    for (const auto& t : tensors) {
        EXPECT_FALSE(t.pass);
        EXPECT_EQ(t.mismatch_count, 4);
        ASSERT_TRUE(t.ties) << "rank " << t.rank;
        EXPECT_EQ(t.ties->named.rows, (std::vector<std::int64_t>{1, 4}));
        EXPECT_EQ(t.ties->named.rule, kRule);
        EXPECT_TRUE(t.ties->explained());
    }

    const std::string text = show(runs[0].id, false);
    EXPECT_NE(text.find("rank 0: mismatch (" + explained + ")"), std::string::npos) << text;
    EXPECT_NE(text.find("rank 1: mismatch (" + explained + ")"), std::string::npos) << text;
    // Said once on the line: the message after it keeps PKB's text only.
    EXPECT_NE(text.find(explained + ") | output: tensors not allclose"), std::string::npos) << text;
    EXPECT_EQ(text.find("; " + explained, text.find("  trial 0:")), std::string::npos) << text;
    EXPECT_NE(text.find("[tie-explained]"), std::string::npos) << text;

    const auto body = nlohmann::json::parse(show(runs[0].id, true));
    ASSERT_EQ(body.at("tensors").size(), 2u);
    const auto& ties = body.at("tensors").at(0).at("ties");
    EXPECT_EQ(ties.at("explained"), true);
    EXPECT_EQ(ties.at("rows"), nlohmann::json::parse("[1, 4]"));
    EXPECT_EQ(ties.at("rule"), kRule);
    EXPECT_EQ(ties.at("mismatched_elements_in_tie_rows"), 4);
    EXPECT_EQ(ties.at("text"), explained);
}

TEST_F(TieEval, MismatchOutsideTheTieRowsIsNotTieExplained) {
    ASSERT_EQ(eval(candidate("    out[0] += 1.0f;  // token 0 has no tie")), 1) << out.str() << err.str();
    auto store = pkbw::Store::open_read_only(this->store());
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    for (const auto& t : store.tensor_results(runs[0].id, false)) {
        ASSERT_TRUE(t.ties);
        EXPECT_FALSE(t.ties->explained());
        EXPECT_EQ(t.ties->mismatched_rows_outside, 1);
        EXPECT_EQ(t.ties->mismatched_rows_in_tie_rows, 2);
    }
    const std::string text = show(runs[0].id, false);
    EXPECT_NE(text.find("rank 0: mismatch (not tie-explained: 1 mismatched row is outside the 2 tie rows, 2 "
                        "inside (" +
                        kRule + "))"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("[not tie-explained]"), std::string::npos) << text;
    const auto body = nlohmann::json::parse(show(runs[0].id, true));
    EXPECT_EQ(body.at("tensors").at(0).at("ties").at("explained"), false);
}

TEST_F(TieEval, APassingCandidateKeepsTheTieRowsUnclassified) {
    ASSERT_EQ(eval(pkbw::test::kTieReferenceSource), 0) << out.str() << err.str();
    auto store = pkbw::Store::open_read_only(this->store());
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    const auto tensors = store.tensor_results(runs[0].id, false);
    ASSERT_EQ(tensors.size(), 4u); // two trials, two ranks
    for (const auto& t : tensors) {
        EXPECT_TRUE(t.pass);
        ASSERT_TRUE(t.ties);
        EXPECT_FALSE(t.ties->classified);
        EXPECT_EQ(t.ties->named.rows.size(), 2u);
    }
    const std::string text = show(runs[0].id, false);
    EXPECT_EQ(text.find("tie-explained"), std::string::npos) << text;
    EXPECT_NE(text.find("[2 tie rows]"), std::string::npos) << text;
}

// Every timed call is checked with the tie rows of its own fresh inputs: a candidate that breaks ties the
// other way only once its trials are over fails the check of its timed calls, and the message says why.
TEST_F(TieEval, TimedCallsReportTieExplainedMismatches) {
    std::string late = pkbw::test::kTieReferenceSource;
    // From its second call on (the trial was the first), ties go to the higher index.
    const std::string rule = "in[t * 4 + e] > in[t * 4 + second]";
    late.replace(late.find(rule), rule.size(),
                 "(calls > 1 ? in[t * 4 + e] >= in[t * 4 + second] : " + rule + ")");
    late.replace(late.find("    const float* in"), 0, "    static int calls = 0;\n    ++calls;\n");
    ASSERT_NE(eval(late, true), 0) << out.str() << err.str();
    auto store = pkbw::Store::open_read_only(this->store());
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].status, pkbw::RunStatus::InvalidTiming) << runs[0].summary;
    EXPECT_NE(runs[0].summary.find("a timed call's output failed its check"), std::string::npos)
        << runs[0].summary;
    EXPECT_NE(runs[0].summary.find("tie-explained: all 4 mismatched elements are in 2 of the 2 tie rows (" +
                                   kRule + ")"),
              std::string::npos)
        << runs[0].summary;
}
