#include "pkbw/core/perf_stats.h"
#include "pkbw/core/random.h"

#include <cmath>
#include <gtest/gtest.h>

using namespace pkbw;

TEST(PerfStats, SummaryOfKnownSamples) {
    const SampleSummary s = summarize({5, 1, 4, 2, 3});
    EXPECT_EQ(s.count, 5u);
    EXPECT_DOUBLE_EQ(s.median, 3);
    EXPECT_DOUBLE_EQ(s.mean, 3);
    EXPECT_DOUBLE_EQ(s.min, 1);
    EXPECT_DOUBLE_EQ(s.max, 5);
    EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.5));
    // Linear interpolation: p5 of 1..5 sits 0.2 of the way from 1 to 2.
    EXPECT_DOUBLE_EQ(s.p5, 1.2);
    EXPECT_DOUBLE_EQ(s.p95, 4.8);
    EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
    EXPECT_EQ(summarize({}).count, 0u);
}

TEST(PerfStats, SlowestRankPerIteration) {
    const auto slowest = slowest_rank_per_iteration({{1, 5, 3}, {2, 4, 3, 9}});
    EXPECT_EQ(slowest, (std::vector<double>{2, 5, 3}));
}

TEST(PerfStats, BlockOrderIsAbba) {
    using enum BlockSide;
    EXPECT_EQ(block_order(3),
              (std::vector<BlockSide>{Reference, Candidate, Candidate, Reference, Reference, Candidate}));
    // Equal counts of each side, and a linear drift sums to the same total on both sides for even pairs.
    const auto order = block_order(4);
    double reference_drift = 0, candidate_drift = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
        (order[i] == Reference ? reference_drift : candidate_drift) += static_cast<double>(i);
    }
    EXPECT_DOUBLE_EQ(reference_drift, candidate_drift);
}

TEST(PerfStats, BusBandwidthFormulas) {
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::AllReduce, 8), 2.0 * 7 / 8);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::AllGather, 4), 0.75);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::ReduceScatter, 2), 0.5);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::AllToAll, 8), 7.0 / 8);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::Broadcast, 8), 1.0);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveKind::Reduce, 8), 1.0);
    // 1 GiB allreduce on 2 ranks in 3.29 ms: algbw 326 GB/s, busbw equal at n=2 (gpu-facts.md §1.6).
    const Bandwidth bw = bandwidth(CollectiveKind::AllReduce, 2, 1073741824.0, 3.29);
    EXPECT_NEAR(bw.algbw_gbps, 326.4, 0.1);
    EXPECT_NEAR(bw.busbw_gbps, bw.algbw_gbps, 1e-9);
}

TEST(PerfStats, PkbSpeedupUsesMaxOfRankMeans) {
    const PkbSpeedup s = pkb_speedup({{1, 1}, {2, 4}}, {{1, 1}, {1, 2}});
    EXPECT_DOUBLE_EQ(s.reference_ms, 3);
    EXPECT_DOUBLE_EQ(s.candidate_ms, 1.5);
    EXPECT_DOUBLE_EQ(s.speedup, 2);
}

namespace {
// Blocks of noisy samples around a true time, with a per-block offset (the correlated part).
std::vector<TimedBlock> synthetic_blocks(double reference_ms, double candidate_ms, int pairs, int iterations,
                                         std::uint64_t seed) {
    const CounterRng rng(seed);
    std::uint64_t draw = 0;
    std::vector<TimedBlock> blocks;
    int index = 0;
    for (BlockSide side : block_order(pairs)) {
        TimedBlock block{side, index++, {}};
        const double truth = side == BlockSide::Reference ? reference_ms : candidate_ms;
        const double block_shift = 1.0 + 0.01 * rng.normal(draw++);
        for (int i = 0; i < iterations; ++i) {
            block.samples.push_back(truth * block_shift * (1.0 + 0.02 * rng.normal(draw++)));
        }
        blocks.push_back(std::move(block));
    }
    return blocks;
}
} // namespace

TEST(PerfStats, SpeedupPointEstimateAndVerdicts) {
    const auto faster = estimate_speedup(synthetic_blocks(2.0, 1.0, 5, 100, 7), 500);
    EXPECT_NEAR(faster.speedup, 2.0, 0.05);
    EXPECT_LT(faster.ci_low, faster.speedup);
    EXPECT_GT(faster.ci_high, faster.speedup);
    EXPECT_EQ(faster.verdict, Verdict::Faster);
    EXPECT_EQ(estimate_speedup(synthetic_blocks(1.0, 2.0, 5, 100, 8), 500).verdict, Verdict::Slower);
    EXPECT_EQ(estimate_speedup(synthetic_blocks(1.0, 1.0, 5, 100, 9), 500).verdict, Verdict::WithinNoise);
}

TEST(PerfStats, ConfidenceIntervalCoverage) {
    // Over many independent synthetic experiments with a known true speedup of 1.25, the 95%
    // interval must contain the truth in most of them. Block bootstrap with few blocks is known to
    // under-cover a little; accept 85%..100% over 200 experiments (deterministic seeds).
    int covered = 0;
    const int experiments = 200;
    for (int e = 0; e < experiments; ++e) {
        const auto estimate = estimate_speedup(synthetic_blocks(1.25, 1.0, 5, 50, 1000 + e), 400, e + 1);
        covered += estimate.ci_low <= 1.25 && 1.25 <= estimate.ci_high;
    }
    EXPECT_GE(covered, experiments * 85 / 100);
}
