// The run folder's layout (core/include/pkbw/core/run_layout.h): the paths every side composes from
// its patterns. PKB's Python judge restates the patterns it writes; tests/engine/test_pkb_contract_words.py
// holds those to the header.
#include "pkbw/core/run_layout.h"

#include <gtest/gtest.h>

namespace pkbw::run_layout {
namespace {

TEST(RunLayout, PathsOfARunFolder) {
    const std::filesystem::path run = "/runs/run-7";
    EXPECT_EQ(config(run), "/runs/run-7/config.json");
    EXPECT_EQ(environment(run), "/runs/run-7/environment.json");
    EXPECT_EQ(compile_log(run, "candidate"), "/runs/run-7/compile_candidate.log");
    EXPECT_EQ(rank_log(run, 3), "/runs/run-7/rank_3.log");
    EXPECT_EQ(rank_events(run, 0), "/runs/run-7/rank_0.events.jsonl");
    EXPECT_EQ(trial_dir(run, 12), "/runs/run-7/outputs/trial_12");
    EXPECT_EQ(trial_outputs(run, 2, 1, "reference"),
              "/runs/run-7/outputs/trial_2/rank_1_reference.safetensors");
    EXPECT_EQ(trial_inputs(run, 0, 5), "/runs/run-7/outputs/trial_0/rank_5_inputs.safetensors");
    EXPECT_EQ(trace_dir(run), "/runs/run-7/trace");
    EXPECT_EQ(engine_trace(trace_dir(run) / kCandidateTraceDir, 1),
              "/runs/run-7/trace/candidate/rank_1.engine.jsonl");
}

TEST(RunLayout, FillReplacesEveryFieldItNames) {
    EXPECT_EQ(fill(kTorchTrace, 4, 0, "candidate"), "rank_4.candidate.torch.json");
    EXPECT_EQ(fill("{rank}-{rank}/{trial}", 2, 9), "2-2/9");
    EXPECT_EQ(fill(kConfig, 1, 2, "x"), "config.json");  // no field: unchanged
    EXPECT_EQ(fill("{side}", 0, 0, "{side}"), "{side}"); // a value that looks like a field is not refilled
}

} // namespace
} // namespace pkbw::run_layout
