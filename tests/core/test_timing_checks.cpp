#include "pkbw/core/timing_checks.h"

#include <gtest/gtest.h>

using namespace pkbw;

namespace {
constexpr std::size_t MiB = 1 << 20;
}

TEST(CheckedTimingPlan, TheCallsAskedForWhenTheyFit) {
    const auto plan = plan_checked_timing(2 * MiB, 2 * MiB, 32ull << 30, 50, 10);
    EXPECT_EQ(plan.calls_per_block, 50);
    EXPECT_EQ(plan.reason, "50 calls asked for");
    EXPECT_EQ(plan.staging_bytes, 11u * 50 * 2 * MiB); // ten pairs and the warm-up
    EXPECT_EQ(plan.slot_bytes, 50u * (2 + 4) * MiB);
    const auto many = plan_checked_timing(4096, 4096, 32ull << 30, 1000, 10);
    EXPECT_EQ(many.calls_per_block, kMaxCallsPerBlock);
    EXPECT_NE(many.reason.find("at most"), std::string::npos);
}

TEST(CheckedTimingPlan, LargeInputsGetFewerCallsToFitTheBudgetButAlwaysOne) {
    // 1 GiB inputs and outputs, 16 GiB budget: (10 + 2) GiB + 2 GiB per call fits once.
    const auto plan = plan_checked_timing(1ull << 30, 1ull << 30, 16ull << 30, 50, 10);
    EXPECT_EQ(plan.calls_per_block, 1);
    EXPECT_NE(plan.reason.find("lowered"), std::string::npos);
    const auto huge = plan_checked_timing(64ull << 30, 0, 16ull << 30, 50, 10);
    EXPECT_EQ(huge.calls_per_block, 1);
    // 64 MiB inputs: 12 x 64 + 2 x 64 MiB per call in 8 GiB is 9 calls.
    EXPECT_EQ(plan_checked_timing(64 * MiB, 64 * MiB, 8ull << 30, 50, 10).calls_per_block, 9);
}

TEST(CheckedTimingPlan, JudgeCallTimeSubtractsTheRoundTripAndNeverGoesNegative) {
    EXPECT_DOUBLE_EQ(judge_call_ms(1.05, 0.05, 100), 0.01);
    EXPECT_DOUBLE_EQ(judge_call_ms(0.03, 0.05, 100), 0.0);
    EXPECT_DOUBLE_EQ(judge_call_ms(1.0, 0.0, 0), 0.0);
}

TEST(TimingChecks, SamplesThatAgreeWithTheJudgesClockAreNotAFinding) {
    // 100 calls of 10 us: the events span 1.0 ms; the judge saw 1.08 ms with a 0.05 ms round trip.
    EXPECT_FALSE(samples_disagree({{1.0, 1.08, 0.05}}));
    // A loaded host: most blocks preempted for milliseconds, one clean: the clean one decides.
    EXPECT_FALSE(samples_disagree({{4.0, 12.0, 1.2}, {3.9, 8.1, 1.2}, {4.0, 5.4, 1.2}, {3.8, 7.0, 1.2}}));
    // A short block: barrier and first launch fit the fixed allowance.
    EXPECT_FALSE(samples_disagree({{0.05, 0.05 + 0.05 + kSamplesAllowanceMs * 0.9, 0.05}}));
    EXPECT_FALSE(samples_disagree({}));
}

TEST(TimingChecks, ShrunkOrSlowedSamplesAreAFinding) {
    // Samples shrunk 5.8x (the forged clock) in every block.
    const auto shrunk = samples_disagree({{1.7, 10.05, 0.05}, {1.72, 10.5, 0.05}});
    ASSERT_TRUE(shrunk);
    EXPECT_NE(shrunk->find("not the block's"), std::string::npos);
    EXPECT_NE(shrunk->find("reported 1.700 ms for a block that took 10.000 ms"), std::string::npos)
        << *shrunk;
    // A process clock slowed 1.3x reports less than happened in every block; one sped up reports more
    // than the judge could have seen.
    EXPECT_TRUE(samples_disagree({{10.0 / 1.3, 10.05, 0.05}, {10.0 / 1.3, 10.3, 0.05}}));
    EXPECT_TRUE(samples_disagree({{13.0, 10.05, 0.05}, {13.0, 10.05, 0.05}}));
    EXPECT_FALSE(samples_disagree({{13.0, 10.05, 0.05}, {10.0, 10.05, 0.05}}));
}

TEST(TimingChecks, CpuWhileFrozenAndABusyGpu) {
    EXPECT_FALSE(cpu_while_frozen(0.0));
    EXPECT_FALSE(cpu_while_frozen(kFrozenCpuAllowanceMs));
    const auto cpu = cpu_while_frozen(35.0);
    ASSERT_TRUE(cpu);
    EXPECT_NE(cpu->find("35.0 ms"), std::string::npos);

    EXPECT_FALSE(gpu_busy(25.0, 24.0, "while the reference was timed"));
    EXPECT_FALSE(gpu_busy(24.0 + kGpuBusyAllowanceUs, 24.0, "x"));
    const auto gpu = gpu_busy(2100.0, 24.0, "while the reference was timed");
    ASSERT_TRUE(gpu);
    EXPECT_NE(gpu->find("2100 us while the reference was timed"), std::string::npos);
}

TEST(TimingChecks, OneCallHoldingMostBlocksIsAFindingAndAnHonestSpreadIsNot) {
    const std::vector<double> even(50, 0.2);
    std::vector<double> batched(50, 0.0);
    batched[0] = 9.0; // call 0 computed the block, the others returned at once
    std::vector<double> cold_first(50, 0.2);
    cold_first[0] = 3.0; // a cold first call: 3 of 12.8 ms
    EXPECT_FALSE(one_call_holds_the_block({even, even, even}));
    EXPECT_FALSE(one_call_holds_the_block({cold_first, cold_first}));
    // One preempted call in one block of four: noise, not a pattern.
    EXPECT_FALSE(one_call_holds_the_block({batched, even, even, even}));
    const auto finding = one_call_holds_the_block({batched, batched, even});
    ASSERT_TRUE(finding);
    EXPECT_NE(finding->find("in 2 of 3 blocks one call took most of the block"), std::string::npos)
        << *finding;
    EXPECT_NE(finding->find("up to 100% of 50 calls"), std::string::npos) << *finding;
    // Blocks too short to tell, or no samples: nothing is said.
    EXPECT_FALSE(one_call_holds_the_block({{5.0, 0.0, 0.0}, {5.0, 0.0, 0.0}}));
    EXPECT_FALSE(one_call_holds_the_block({}));
}

TEST(GraphPasses, MicrosecondCallsGetPassesUpToTheTargetAndTheCap) {
    // 50 calls of 5 us: 0.25 ms a pass, 32 passes for 8 ms.
    const auto short_calls = plan_graph_passes(0.005, 50, 50 * 6 * MiB, 32ull << 30);
    EXPECT_EQ(short_calls.passes, 32);
    EXPECT_NE(short_calls.reason.find("32 passes"), std::string::npos);
    // 1 us calls would want 160: capped.
    EXPECT_EQ(plan_graph_passes(0.001, 50, 1024, 32ull << 30).passes, kMaxGraphPasses);
    // A pass that already takes the target, or a time not measured: one pass on the launched slots.
    EXPECT_EQ(plan_graph_passes(0.2, 50, 1024, 32ull << 30).passes, 1);
    EXPECT_EQ(plan_graph_passes(0.0, 50, 1024, 32ull << 30).passes, 1);
    EXPECT_NE(plan_graph_passes(0.2, 50, 1024, 32ull << 30).reason.find("one pass"), std::string::npos);
}

TEST(GraphPasses, MemoryBoundsThePasses) {
    // 300 MiB a pass, 2 GiB left: 6 passes where 64 were wanted.
    const auto bounded = plan_graph_passes(0.0025, 50, 300 * MiB, 2048 * MiB);
    EXPECT_EQ(bounded.passes, 6);
    EXPECT_NE(bounded.reason.find("memory left holds 6"), std::string::npos);
    // Room for one pass only: the launched slots, said.
    const auto one = plan_graph_passes(0.0025, 50, 300 * MiB, 400 * MiB);
    EXPECT_EQ(one.passes, 1);
    EXPECT_NE(one.reason.find("fewer than two"), std::string::npos);
}
