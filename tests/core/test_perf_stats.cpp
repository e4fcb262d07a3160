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
    EXPECT_EQ(estimate_speedup(synthetic_blocks(1.0, 1.0, 5, 100, 9), 500).verdict, Verdict::Same);
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

TEST(PerfStats, VerdictClassesFollowTheBand) {
    const VerdictRule rule{0.05, 0, ""};
    EXPECT_EQ(classify_speedup(1.30, 1.20, 1.40, rule), Verdict::Faster);
    EXPECT_EQ(classify_speedup(0.70, 0.60, 0.80, rule), Verdict::Slower);
    EXPECT_EQ(classify_speedup(1.01, 0.97, 1.04, rule), Verdict::Same);
    // Clear of 1 but inside the band: no difference worth the name.
    EXPECT_EQ(classify_speedup(1.02, 1.01, 1.03, rule), Verdict::Same);
    // Reaches past the band on one side and across 1: the data cannot tell.
    EXPECT_EQ(classify_speedup(1.04, 0.98, 1.12, rule), Verdict::Ambiguous);
    // Clear of 1 but the point estimate inside the band: not called faster.
    EXPECT_EQ(classify_speedup(1.03, 1.005, 1.09, rule), Verdict::Ambiguous);
    // A measured noise floor wider than the minimum effect widens the band.
    EXPECT_EQ(classify_speedup(1.08, 1.06, 1.10, VerdictRule{0.05, 0.12, "a/a"}), Verdict::Same);
    EXPECT_EQ(classify_speedup(0, 0, 0, rule), Verdict::Ambiguous);
    for (Verdict v : {Verdict::Faster, Verdict::Slower, Verdict::Same, Verdict::Ambiguous}) {
        EXPECT_EQ(verdict_from_name(verdict_name(v)), v);
        EXPECT_EQ(verdict_from_code(verdict_code(v)), v);
    }
    EXPECT_FALSE(verdict_from_name("within noise").has_value());
    EXPECT_TRUE(clears(1.2, 1.0));
    EXPECT_FALSE(clears(0.99, 1.0));
}

namespace {
// L launches of one pair where each launch carries an effect fixed for its life (placement, clocks):
// a per-launch factor on the reference of sd `between`, on top of synthetic_blocks' within-run noise.
std::vector<std::vector<TimedBlock>> synthetic_launches(double speedup, int launches, double between,
                                                        std::uint64_t seed) {
    const CounterRng rng(seed, 0x1A);
    std::vector<std::vector<TimedBlock>> out;
    for (int l = 0; l < launches; ++l) {
        const double fixed = std::exp(between * rng.normal(static_cast<std::uint64_t>(l)));
        out.push_back(
            synthetic_blocks(speedup * fixed, 1.0, 4, 20, seed * 131 + static_cast<std::uint64_t>(l)));
    }
    return out;
}
} // namespace

TEST(PerfStats, ReplicatedIntervalCoversRunToRunVariation) {
    // With a launch-level effect (5%) much larger than the within-run noise, one launch's interval misses
    // the truth most of the time; the interval over launches covers it in about 95% of experiments.
    int single_covered = 0, replicated_covered = 0;
    const int experiments = 200;
    for (int e = 0; e < experiments; ++e) {
        const auto launches = synthetic_launches(1.25, 4, 0.05, 500 + static_cast<std::uint64_t>(e));
        const auto single = estimate_speedup(launches.front(), 200, static_cast<std::uint64_t>(e) + 1);
        single_covered += single.ci_low <= 1.25 && 1.25 <= single.ci_high;
        const auto r = estimate_replicated(launches, {}, 200, static_cast<std::uint64_t>(e) + 1);
        ASSERT_TRUE(r.replicated);
        replicated_covered += r.pooled.ci_low <= 1.25 && 1.25 <= r.pooled.ci_high;
    }
    EXPECT_LT(single_covered, experiments * 60 / 100);
    EXPECT_GE(replicated_covered, experiments * 88 / 100);
}

TEST(PerfStats, ReplicatedEstimateSaysWhenBetweenLaunchVarianceDominates) {
    const auto noisy = estimate_replicated(synthetic_launches(1.0, 5, 0.08, 77), {}, 300);
    EXPECT_TRUE(noisy.between_dominates);
    EXPECT_GT(noisy.between_sd, noisy.within_sd);
    EXPECT_EQ(noisy.launches.size(), 5u);
    const auto steady = estimate_replicated(synthetic_launches(1.0, 5, 0.0, 78), {}, 300);
    EXPECT_FALSE(steady.between_dominates);
    // A/A with no launch effect: the same code is the same.
    EXPECT_EQ(steady.pooled.verdict, Verdict::Same);
    EXPECT_NEAR(steady.pooled.speedup, 1.0, 0.02);
    // One launch: its own interval, not called replicated.
    const auto one = estimate_replicated(synthetic_launches(1.5, 1, 0.0, 79), {}, 300);
    EXPECT_FALSE(one.replicated);
    EXPECT_NEAR(one.pooled.speedup, 1.5, 0.05);
    EXPECT_EQ(one.pooled.verdict, Verdict::Faster);
}

// Three launches of identical code (3.2 us a call) that agree to 0.1%, where one launch holds a single
// candidate block 15% slow (a stall in one block of five): that launch's own interval reaches 0.87. As
// measured on the H200 (an A/A run read [0.94, 1.05], "ambiguous"), Student's t with two degrees of
// freedom applied to that floor made the pooled interval fail the 5% band; the floor comes from the
// launch's blocks, not from the three launches, and takes the normal quantile.
TEST(PerfStats, OneLaunchsSlowBlockDoesNotMakeIdenticalCodeAmbiguous) {
    const CounterRng rng(11, 0xAA);
    std::uint64_t draw = 0;
    auto block = [&](BlockSide side, int index, double ms) {
        TimedBlock b{side, index, {}};
        for (int i = 0; i < 50; ++i)
            b.samples.push_back(ms * (1 + 0.002 * rng.normal(draw++)));
        return b;
    };
    std::vector<std::vector<TimedBlock>> launches(3);
    for (int l = 0; l < 3; ++l) {
        for (int pair = 0; pair < 5; ++pair) {
            const bool stalled = l == 2 && pair == 3;
            launches[l].push_back(block(BlockSide::Reference, 2 * pair, 0.0032));
            launches[l].push_back(
                block(BlockSide::Candidate, 2 * pair + 1, stalled ? 0.0032 * 1.15 : 0.0032));
        }
    }
    const auto r = estimate_replicated(launches, {}, 2000, 5);
    ASSERT_TRUE(r.replicated);
    EXPECT_LT(r.launches[2].ci_low, 0.95) << "the stalled launch's own interval reaches past the band";
    EXPECT_GT(r.within_sd, 3 * r.between_sd) << "the launches agree; the floor is the within-launch noise";
    // The floor: 1.96 x the within-launch sd over sqrt(3), no narrower and not t(2)'s 4.3; with the
    // allowance for what moves between runs in quadrature.
    const double floor_half = 1.96 * r.within_sd / std::sqrt(3.0);
    const double unseen_half = 1.96 * kUnseenRunSd;
    EXPECT_NEAR(std::log(r.pooled.ci_high) - std::log(r.pooled.speedup),
                std::sqrt(floor_half * floor_half + unseen_half * unseen_half), 1e-9);
    EXPECT_EQ(r.pooled.verdict, Verdict::Same);
}

namespace {
// One run of `launches` launches whose every launch shares the run's state (a device mode that lasts
// minutes: sd `run_sd` of the log speedup), each launch moving a little on its own (sd `launch_sd`) and
// its blocks steady.
std::vector<std::vector<TimedBlock>> run_in_one_state(double truth, int launches, double run_sd,
                                                      double launch_sd, std::uint64_t seed) {
    const CounterRng rng(seed, 0x5E55);
    const double state = std::exp(run_sd * rng.normal(0));
    std::vector<std::vector<TimedBlock>> out;
    for (int l = 0; l < launches; ++l) {
        const double launch = std::exp(launch_sd * rng.normal(static_cast<std::uint64_t>(l) + 1));
        std::vector<TimedBlock> blocks;
        for (int pair = 0; pair < 5; ++pair) {
            TimedBlock reference{BlockSide::Reference, 2 * pair, {}},
                candidate{BlockSide::Candidate, 2 * pair + 1, {}};
            for (int i = 0; i < 20; ++i) {
                const auto draw = static_cast<std::uint64_t>(1000 + 100 * l + 20 * pair + i);
                reference.samples.push_back(0.0110 * truth * state * launch *
                                            (1 + 0.0005 * rng.normal(2 * draw)));
                candidate.samples.push_back(0.0110 * (1 + 0.0005 * rng.normal(2 * draw + 1)));
            }
            blocks.push_back(std::move(reference));
            blocks.push_back(std::move(candidate));
        }
        out.push_back(std::move(blocks));
    }
    return out;
}
} // namespace

// Problem 12's tuned pair on the H200: the launches of one run agreed to about 0.1% while runs moved by
// about 0.45% (a device mode lasting minutes); two of nine intervals missed the median of the nine. The
// allowance covers what the launches cannot see; without it, a run whose launches agree claims their
// agreement.
TEST(PerfStats, TheIntervalCoversWhatMovesBetweenRunsAndNotBetweenLaunches) {
    int with_allowance = 0, without = 0;
    const int runs = 300;
    for (int e = 0; e < runs; ++e) {
        const auto launches = run_in_one_state(0.82, 3, 0.0045, 0.001, 900 + static_cast<std::uint64_t>(e));
        const auto r = estimate_replicated(launches, {}, 200, static_cast<std::uint64_t>(e) + 1);
        with_allowance += r.pooled.ci_low <= 0.82 && 0.82 <= r.pooled.ci_high;
        EXPECT_DOUBLE_EQ(r.unseen_run_sd, kUnseenRunSd);
        const auto bare = estimate_replicated(launches, {}, 200, static_cast<std::uint64_t>(e) + 1, 0.0);
        without += bare.pooled.ci_low <= 0.82 && 0.82 <= bare.pooled.ci_high;
    }
    EXPECT_GE(with_allowance, runs * 93 / 100);
    EXPECT_LT(without, runs * 75 / 100) << "the launches alone claim their agreement";
    // One launch keeps its own interval: it says already that it does not cover run-to-run variation.
    const auto one = estimate_replicated(run_in_one_state(0.82, 1, 0.0, 0.0, 7), {}, 200, 1);
    EXPECT_FALSE(one.replicated);
    EXPECT_EQ(one.unseen_run_sd, 0.0);
}

namespace {
MachinePeaks test_peaks() {
    MachinePeaks peaks;
    peaks.source = "test rates";
    peaks.memory_gbps = 4000;
    peaks.busbw_gbps = 250;
    peaks.busbw_source = "calibrated";
    peaks.compute_tflops = 1000;
    return peaks;
}
} // namespace

TEST(PlausibilityFloor, MemoryTermSetsTheFloorTimesTheSafetyFactor) {
    WorkModel work;
    work.collective = CollectiveKind::AllReduce;
    work.collective_bytes = 1e6; // 2 ranks: 1e6 x 1 / 250 GB/s = 0.004 ms
    work.flops = 1e9;            // 0.001 ms
    work.memory_bytes = 4e9;     // 1 ms at 4000 GB/s
    const PlausibilityFloor floor = plausibility_floor(work, test_peaks(), 2);
    EXPECT_EQ(floor.term, FloorTerm::Memory);
    EXPECT_DOUBLE_EQ(floor.memory_ms, 1.0);
    EXPECT_DOUBLE_EQ(floor.compute_ms, 0.001);
    EXPECT_DOUBLE_EQ(floor.communication_ms, 0.004);
    EXPECT_DOUBLE_EQ(floor.safety_factor, kPlausibilitySafetyFactor);
    EXPECT_DOUBLE_EQ(floor.floor_ms, 1.0 * kPlausibilitySafetyFactor);
    EXPECT_EQ(floor.explanation, "memory: 4000000000 bytes at 4000 GB/s, x0.5 margin");
    EXPECT_EQ(floor.note, "");
}

TEST(PlausibilityFloor, ComputeAndCommunicationTerms) {
    WorkModel gemm;
    gemm.flops = 2e12; // 2 ms at 1000 TFLOP/s
    gemm.memory_bytes = 4e6;
    PlausibilityFloor floor = plausibility_floor(gemm, test_peaks(), 2, 1.0);
    EXPECT_EQ(floor.term, FloorTerm::Compute);
    EXPECT_DOUBLE_EQ(floor.floor_ms, 2.0);
    EXPECT_EQ(floor.explanation, "compute: 2000000000000 FLOP at 1000 TFLOP/s");

    // All-reduce on 4 ranks: busbw factor 2(n-1)/n = 1.5, so 1e9 bytes need 1.5e9 / 250e9 s = 6 ms.
    WorkModel allreduce;
    allreduce.collective = CollectiveKind::AllReduce;
    allreduce.collective_bytes = 1e9;
    allreduce.memory_bytes = 2e9; // 0.5 ms
    floor = plausibility_floor(allreduce, test_peaks(), 4);
    EXPECT_EQ(floor.term, FloorTerm::Communication);
    EXPECT_DOUBLE_EQ(floor.communication_ms, 6.0);
    EXPECT_DOUBLE_EQ(floor.floor_ms, 3.0);
    EXPECT_EQ(floor.explanation,
              "communication: allreduce of 1000000000 bytes, busbw factor 1.5, at 250 GB/s "
              "busbw (calibrated), x0.5 margin");
    // The terms overlap at best: the floor is the largest one, not their sum.
    EXPECT_LT(floor.floor_ms, (floor.communication_ms + floor.memory_ms) * floor.safety_factor);
}

TEST(PlausibilityFloor, OneRankHasNoCommunicationTerm) {
    WorkModel work;
    work.collective = CollectiveKind::AllReduce;
    work.collective_bytes = 1e9;
    work.memory_bytes = 4e6; // 0.001 ms
    PlausibilityFloor floor = plausibility_floor(work, test_peaks(), 1);
    EXPECT_DOUBLE_EQ(floor.communication_ms, 0);
    EXPECT_EQ(floor.term, FloorTerm::Memory);
    EXPECT_DOUBLE_EQ(floor.floor_ms, 0.0005);
    // Broadcast's busbw factor is 1 at any n, but one rank still sends nothing.
    work.collective = CollectiveKind::Broadcast;
    floor = plausibility_floor(work, test_peaks(), 1);
    EXPECT_DOUBLE_EQ(floor.communication_ms, 0);
    EXPECT_EQ(floor.term, FloorTerm::Memory);
}

TEST(PlausibilityFloor, NoPeaksOrNoWorkMeansNoFloor) {
    WorkModel work;
    work.memory_bytes = 1e9;
    MachinePeaks host;
    host.source = "the host backend";
    PlausibilityFloor floor = plausibility_floor(work, host, 2);
    EXPECT_DOUBLE_EQ(floor.floor_ms, 0);
    EXPECT_EQ(floor.term, FloorTerm::None);
    EXPECT_EQ(floor.note, "no floor: no peak rates known for the host backend");
    EXPECT_FALSE(below_floor_warning("candidate", 1e-9, floor));

    floor = plausibility_floor(WorkModel{}, test_peaks(), 2);
    EXPECT_DOUBLE_EQ(floor.floor_ms, 0);
    EXPECT_NE(floor.note.find("no floor"), std::string::npos);
}

TEST(PlausibilityFloor, WarningOnlyBelowTheFloor) {
    WorkModel work;
    work.memory_bytes = 4e9; // 1 ms at 4000 GB/s, floor 0.5 ms
    const PlausibilityFloor floor = plausibility_floor(work, test_peaks(), 2);
    const auto warning = below_floor_warning("candidate", 0.01, floor);
    ASSERT_TRUE(warning);
    EXPECT_EQ(*warning, "candidate median 0.01 ms is below the plausibility floor 0.5 ms (memory: 4000000000 "
                        "bytes at 4000 GB/s, x0.5 margin): faster than this machine can go");
    EXPECT_FALSE(below_floor_warning("candidate", 0.5, floor));
    EXPECT_FALSE(below_floor_warning("candidate", 0.7, floor));
    EXPECT_FALSE(below_floor_warning("candidate", 0, floor)); // no samples
}

TEST(PlausibilityFloor, DocumentedRatesOnlyForTheH200) {
    const auto h200 = documented_peaks("NVIDIA H200");
    ASSERT_TRUE(h200);
    EXPECT_DOUBLE_EQ(h200->memory_gbps, 4200);
    EXPECT_DOUBLE_EQ(h200->busbw_gbps, 374);
    EXPECT_DOUBLE_EQ(h200->compute_tflops, 989);
    EXPECT_EQ(h200->source, "documented NVIDIA H200 rates");
    EXPECT_FALSE(documented_peaks("NVIDIA H100 80GB HBM3"));
    EXPECT_FALSE(documented_peaks("host"));
    EXPECT_FALSE(documented_peaks(""));
    // 1 GiB all-reduce on 2 H200s measured 3.29 ms (gpu-facts.md §1.6): well above its floor.
    WorkModel allreduce;
    allreduce.collective = CollectiveKind::AllReduce;
    allreduce.collective_bytes = 1073741824.0;
    allreduce.memory_bytes = 2 * 1073741824.0;
    const PlausibilityFloor floor = plausibility_floor(allreduce, *h200, 2);
    EXPECT_GT(3.29, floor.floor_ms);
    EXPECT_FALSE(below_floor_warning("candidate", 3.29, floor));
    EXPECT_TRUE(below_floor_warning("candidate", 0.1, floor));
}

TEST(PerfStats, BusbwIsZeroAtOneRankButAlgbwIsNot) {
    const Bandwidth bw = bandwidth(CollectiveKind::AllReduce, 1, 1e9, 1.0);
    EXPECT_DOUBLE_EQ(bw.algbw_gbps, 1000);
    EXPECT_DOUBLE_EQ(bw.busbw_gbps, 0);
}
