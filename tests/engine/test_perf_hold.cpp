// How the candidate's blocks are held to the judge's clock (docs/perf.md "The time"): the level test, the
// per-block floor, its allowance, and the margin the pooled interval allows for, from synthetic
// perf_result events.
#include "perf_report.h"
#include "perf_test_events.h"

#include <array>
#include <cmath>
#include <gtest/gtest.h>
#include <vector>

using namespace pkbw;
using namespace pkbw::cli;
using namespace pkbw::cli::test;

TEST(PerfHold, TheCandidatesOwnTimeIsHeldToTheJudgesClock) {
    // Reference: 1 ms a call by its own events, 0.5 ms of overhead on the judge's clock. Candidate: says
    // 0.1 ms a call, but the judge saw its blocks take 10.6 ms, 9.6 ms of overhead: it is raised by the
    // excess over the reference's less the tolerance (0.02 ms: the reference's overheads do not vary),
    // to (1.0 + 9.6 - 0.5 - 0.02) / 10 ms.
    PerfCollector perf;
    perf.add(0, judged_block("reference", 0, 1.0, 10.5, 10));
    perf.add(0, judged_block("candidate", 1, 0.1, 10.6, 10));
    perf.add(0, judged_block("candidate", 2, 0.1, 10.6, 10));
    perf.add(0, judged_block("reference", 3, 1.0, 10.5, 10));
    const PerfFigures f = perf.compute(allreduce_of(1e6), 1);
    ASSERT_TRUE(f.has_pkbw);
    EXPECT_NEAR(f.sides.at("candidate").summary.median, 1.008, 1e-9);
    EXPECT_NEAR(f.pkbw.speedup, 1.0 / 1.008, 1e-6);
    EXPECT_EQ(f.floored_blocks, 2);
    EXPECT_EQ(f.candidate_blocks, 2);
    EXPECT_NEAR(f.judge_margin_call_ms, 0.002, 1e-9); // what a call could hide: the tolerance, 0.02 ms / 10
    // An honest candidate whose own time fits the judge's clock keeps its own time.
    PerfCollector honest;
    honest.add(0, judged_block("reference", 0, 1.0, 10.5, 10));
    honest.add(0, judged_block("candidate", 1, 0.5, 5.4, 10));
    honest.add(0, judged_block("candidate", 2, 0.5, 5.5, 10));
    honest.add(0, judged_block("reference", 3, 1.0, 10.5, 10));
    const PerfFigures h = honest.compute(allreduce_of(1e6), 1);
    EXPECT_NEAR(h.pkbw.speedup, 2.0, 1e-9);
    EXPECT_EQ(h.floored_blocks, 0);
}

// One scheduling spike in one reference block (8 ms on a loaded host) is not credited to every candidate
// block: the hold compares median overheads, and the spike moves neither the reference's median nor the
// tolerance (a median absolute deviation). With the largest overhead, the under-reporting candidate above
// was held only to (10.6 - 8) / 10 ms and its forged clock passed at about 4x.
TEST(PerfHold, AReferenceSpikeIsNotCreditedToTheCandidate) {
    PerfCollector perf;
    perf.add(0, judged_block("reference", 0, 1.0, 10.5, 10));
    perf.add(0, judged_block("candidate", 1, 0.1, 10.6, 10));
    perf.add(0, judged_block("candidate", 2, 0.1, 10.6, 10));
    perf.add(0, judged_block("reference", 3, 1.0, 18.0, 10)); // the spike
    perf.add(0, judged_block("reference", 4, 1.0, 10.5, 10));
    perf.add(0, judged_block("candidate", 5, 0.1, 10.6, 10));
    perf.add(0, judged_block("candidate", 6, 0.1, 10.6, 10));
    perf.add(0, judged_block("reference", 7, 1.0, 10.5, 10));
    const PerfFigures f = perf.compute(allreduce_of(1e6), 1);
    ASSERT_TRUE(f.has_pkbw);
    EXPECT_NEAR(f.sides.at("candidate").summary.median, 1.008, 1e-9);
    // The reference's worker is trusted: its blocks keep their own time, the spiked one too.
    EXPECT_NEAR(f.sides.at("reference").summary.max, 1.0, 1e-9);
    EXPECT_LT(f.pkbw.speedup, 1.0);
    EXPECT_NEAR(f.judge_margin_call_ms, 0.002, 1e-9);
}

// The hold compares levels, not blocks: an honest candidate whose requests cost what the reference's do,
// with the same jitter, keeps its own time in every block (holding each block to the reference's median
// overhead raised about half of them); one that under-reports by 0.3 ms a block is raised, and gains at
// most the tolerance the reference's jitter allows.
TEST(PerfHold, JitterLikeTheReferencesRaisesNoHonestBlockAndAForgerGainsAtMostTheTolerance) {
    const double reference_overheads[] = {0.50, 0.70, 0.60, 0.55, 0.65};
    const double candidate_overheads[] = {0.45, 0.80, 0.60, 0.70, 0.50};
    auto run = [&](double under_report_ms) {
        PerfCollector perf;
        for (int pair = 0; pair < 5; ++pair) {
            perf.add(0, judged_block("reference", 4 * pair, 0.1, 1.0 + reference_overheads[pair], 10));
            const double judge = 0.5 + candidate_overheads[pair];
            perf.add(0, judged_block("candidate", 4 * pair + 1, (0.5 - under_report_ms) / 10, judge, 10));
        }
        return perf.compute(allreduce_of(1e6), 1);
    };
    const PerfFigures honest = run(0);
    // Each block is also held on its own (its judge time less the reference's median overhead): the two
    // blocks whose jitter goes beyond the reference's median are raised, the median and speedup do not move.
    EXPECT_LE(honest.floored_blocks, 2);
    EXPECT_NEAR(honest.pkbw.speedup, 2.0, 1e-9);
    // Tolerance: 3 x 1.2533 x 1.4826 x 0.05 (the reference's median absolute deviation) x sqrt(2 / 5).
    const double tolerance = 3 * 1.2533 * 1.4826 * 0.05 * std::sqrt(0.4);
    EXPECT_NEAR(honest.judge_margin_call_ms, tolerance / 10, 1e-9);
    const PerfFigures forged = run(0.3);
    EXPECT_EQ(forged.floored_blocks, 5);
    // Held block by block to its judge time less the reference's median overhead and its upper
    // quartile's excess (0.05 ms, within the tolerance) and 0.02 ms: (1.1 - 0.65 - 0.02) / 10, nearly
    // its true time, whatever the level test's tolerance. (Its samples, 0.2 ms of a 0.5 ms block, are
    // within what samples_disagree allows a block, so it keeps that allowance, not the least.)
    EXPECT_GE(forged.sides.at("candidate").summary.median, (0.5 - tolerance) / 10);
    EXPECT_NEAR(forged.sides.at("candidate").summary.median, 0.043, 1e-9);
    EXPECT_LT(forged.pkbw.speedup, 1.0 / (0.05 - tolerance / 10) + 1e-9);
}

// An honest candidate whose requests all cost a little more than the reference's typical one, within the
// reference's own upper quartile (a launched block of 50 calls of 20 us is 1 ms; on the H200 the
// request's round trip moves by 0.15-0.65 ms from block to block on both sides): the per-block floor
// leaves its time alone. With the reference's median as the allowance every such block was raised, and
// a tuned sample of problem 21 read 1.61 in one run where its device spans said 1.82.
TEST(PerfHold, RequestsWithinTheReferencesUpperQuartileRaiseNoHonestBlock) {
    const double reference_overheads[] = {0.50, 0.70, 0.60, 0.55, 0.65}; // median 0.60, upper quartile 0.65
    const double candidate_overheads[] = {0.63, 0.66, 0.64, 0.68, 0.65}; // median 0.65: not raised
    PerfCollector perf;
    for (int pair = 0; pair < 5; ++pair) {
        perf.add(0, judged_block("reference", 4 * pair, 0.1, 1.0 + reference_overheads[pair], 10));
        perf.add(0, judged_block("candidate", 4 * pair + 1, 0.05, 0.5 + candidate_overheads[pair], 10));
    }
    const PerfFigures f = perf.compute(allreduce_of(1e6), 1);
    EXPECT_LE(f.floored_blocks, 1); // the 0.68 ms block only, by 0.01 ms (the median's allowance: all five)
    EXPECT_NEAR(f.pkbw.speedup, 2.0, 1e-9); // 1.89 with the median's allowance
}

namespace {
// One launch of five pairs of 20-call blocks: the reference's calls take 1 ms (20 ms a block), the
// candidate's 0.5 ms (10 ms a block) whatever it reports a call; each side's requests cost its overheads
// (ms a block) on the judge's clock.
PerfFigures twenty_call_launch(const double (&reference_overheads)[5], double candidate_reported_call_ms,
                               const double (&candidate_overheads)[5]) {
    PerfCollector perf;
    for (int pair = 0; pair < 5; ++pair) {
        perf.add(0, judged_block("reference", 4 * pair, 1.0, 20.0 + reference_overheads[pair], 20));
        perf.add(0, judged_block("candidate", 4 * pair + 1, candidate_reported_call_ms,
                                 10.0 + candidate_overheads[pair], 20));
    }
    return perf.compute(allreduce_of(1e6), 1);
}
} // namespace

// On an oversubscribed host a request waits milliseconds for a core: the reference's median overhead
// grows to a good part of a short block. A process the level test raised, whose samples are not its
// blocks', is held to its judge time less the reference's least overhead, not that median, so a clock
// slowed tenfold is not let off by the load (with the median, forge_clock read 4.5x its own clock on a
// loaded CI host, about half its true time).
TEST(PerfHold, UnderLoadAForgerIsHeldToTheReferencesBestRequestNotItsMedian) {
    const double reference_overheads[] = {0.3, 5.0, 6.0, 7.0, 6.5};
    const double candidate_overheads[] = {4.0, 6.0, 0.4, 5.0, 3.0};
    // The candidate's clock says a tenth of its 0.5 ms a call.
    const PerfFigures forged = twenty_call_launch(reference_overheads, 0.05, candidate_overheads);
    EXPECT_EQ(forged.floored_blocks, 5);
    // Each block: (10 + its overhead - 0.3 - 0.02) / 20; the median block's overhead is 4.0 ms.
    EXPECT_NEAR(forged.sides.at("candidate").summary.median, (10.0 + 4.0 - 0.32) / 20, 1e-9);
    EXPECT_GE(forged.sides.at("candidate").summary.median, 10 * 0.05);
    EXPECT_LT(forged.pkbw.speedup, 2.0);
    // An honest candidate on the same host, its requests as erratic as the reference's, is not raised by
    // the level test and keeps the median's allowance: no block is held above its own time by more than
    // its overhead beyond the reference's median.
    const double reversed[] = {6.5, 7.0, 6.0, 5.0, 0.3};
    const PerfFigures h = twenty_call_launch(reference_overheads, 0.5, reversed);
    EXPECT_NEAR(h.sides.at("candidate").summary.median, 0.5, 1e-9);
    EXPECT_NEAR(h.pkbw.speedup, 2.0, 1e-9);
}

// Over launches the hold tests the run as a whole: one launch whose five candidate blocks happen to carry
// more overhead than its reference's (beyond that launch's own tolerance) is not raised when the excess
// over the run is within the run's tolerance; a process that under-reports in every launch still is.
TEST(PerfHold, ALaunchThatExceedsByChanceIsNotRaisedWhenTheRunDoesNot) {
    const double reference_overheads[] = {0.50, 0.52, 0.51, 0.50, 0.52};
    // under_report[l]: what the candidate's process leaves out of each block of launch l (negative: adds).
    auto run = [&](const std::array<double, 3>& under_report, double launch0_extra) {
        PerfCollector perf;
        for (int launch = 0; launch < 3; ++launch) {
            perf.set_launch(launch);
            // Launch 0's candidate requests cost `launch0_extra` ms more than its reference's.
            const double extra = launch == 0 ? launch0_extra : 0.0;
            for (int pair = 0; pair < 5; ++pair) {
                perf.add(0, judged_block("reference", 4 * pair, 0.1, 1.0 + reference_overheads[pair], 10));
                const double judge = 0.5 + reference_overheads[pair] + extra;
                perf.add(
                    0, judged_block("candidate", 4 * pair + 1, (0.5 - under_report[launch]) / 10, judge, 10));
            }
        }
        return perf.compute(allreduce_of(1e6), 1);
    };
    // 0.05 ms is beyond launch 0's own tolerance (0.035 ms), not the run's (0.02 ms against 0.0167 a launch).
    const PerfFigures honest = run({0, 0, 0}, 0.05);
    EXPECT_LE(honest.floored_blocks, 5); // launch 0's blocks, one by one; the run's level is not raised
    EXPECT_GT(honest.pkbw.speedup, 1.9); // launch 0 reads its 0.05 ms a block slower, the run a little
    const PerfFigures forged = run({0.3, 0.3, 0.3}, 0);
    EXPECT_EQ(forged.floored_blocks, 15);
    EXPECT_LT(forged.pkbw.speedup, 1.0 / (0.05 - 0.035 / 10) + 1e-9);
    // Under-reporting in one launch and over-reporting in the others (the mean excess near 0) passes the
    // run's level test, but each of that launch's blocks is held on its own, and the margin (the excesses
    // above 0 over the launches: 0.3 ms a block over 3 launches, 0.01 ms a call) takes the interval's
    // lower end down, so the run cannot read faster.
    const PerfFigures traded = run({0.3, -0.15, -0.15}, 0);
    EXPECT_LE(traded.floored_blocks, 5);
    EXPECT_NEAR(traded.judge_margin_call_ms, 0.01, 1e-9);
    EXPECT_LT(traded.pkbw.ci_low, 1.0);
    EXPECT_NE(traded.pkbw.verdict, Verdict::Faster);
}

// An honest process whose requests cost more than the reference worker's (a loaded host) is raised by
// the level test, but its samples agree with the judge's clock: it keeps the median's allowance.
TEST(PerfHold, ARaisedProcessWhoseSamplesAreItsBlocksKeepsTheMediansAllowance) {
    const double reference_overheads[] = {0.5, 0.6, 0.7, 0.6, 0.5}; // median 0.6, least 0.5
    const double candidate_overheads[] = {1.6, 1.7, 1.8, 1.7, 1.6}; // median 1.7: raised
    const PerfFigures f = twenty_call_launch(reference_overheads, 0.5, candidate_overheads);
    EXPECT_EQ(f.floored_blocks, 5);
    // The median block (1.7 ms of overhead): (11.7 - 0.6 - 0.02) / 20 (with the least: 11.7 - 0.52).
    EXPECT_NEAR(f.sides.at("candidate").summary.median, (11.7 - 0.62) / 20, 1e-9);
}

// A rank raised over the run is held to the reference's least overhead in every launch, also in one
// whose own excess stayed within that launch's tolerance (found by the red team on the host backend: such
// a launch kept the median's allowance and let through 0.81 of its true time).
TEST(PerfHold, EveryLaunchOfARankRaisedOverTheRunIsHeldToTheReferencesBestRequest) {
    const double reference_overheads[] = {0.3, 1.0, 1.2, 1.4, 1.1}; // least 0.3, median 1.1
    PerfCollector perf;
    // Calls of 0.1 ms, 10 a block; the candidate's requests cost what the reference's median does (1.1 ms).
    // It leaves 0.3 ms a block out of launch 0 (within that launch's tolerance, about 0.35 ms) and 1.0 ms
    // out of launches 1 and 2: the run's mean excess, 0.77 ms, is beyond the run's tolerance.
    const double under_report[] = {0.3, 1.0, 1.0};
    for (int launch = 0; launch < 3; ++launch) {
        perf.set_launch(launch);
        for (int pair = 0; pair < 5; ++pair) {
            perf.add(0, judged_block("reference", 4 * pair, 0.2, 2.0 + reference_overheads[pair], 10));
            perf.add(0, judged_block("candidate", 4 * pair + 1, (1.0 - under_report[launch]) / 10, 2.1, 10));
        }
    }
    const PerfFigures f = perf.compute(allreduce_of(1e6), 1);
    EXPECT_EQ(f.floored_blocks, 15);
    ASSERT_EQ(f.replicated.launches.size(), 3u);
    // Launch 0's blocks: (2.1 - 0.3 - 0.02) / 10 = 0.178 ms a call (with the median's allowance, 0.098:
    // below its true 0.1), so launch 0 reads 0.2 / 0.178.
    EXPECT_NEAR(f.replicated.launches[0].speedup, 0.2 / 0.178, 1e-9);
    EXPECT_LE(f.pkbw.speedup, 2.0);
}

// The pooled speedup is the launches' geometric mean: what one launch's process leaves out moves it by
// that over the launches, and the margin is the excesses above 0 averaged over the launches, so the
// lower end taken down by it covers the gain. Counting the largest excess of one launch whole took the
// interval of an honest A/A pair down 3.4% after six launches (H200): the margin must not grow with the
// launches where the excesses do not.
TEST(PerfHold, TheMarginCoversOneLaunchsUnderReportOverTheLaunchesAndDoesNotGrowWithThem) {
    // The reference's requests cost 0.5 ms a block, always (the least tolerance, 0.02 ms, is the run's);
    // the honest candidate's 0.48-0.52 ms.
    auto run = [](const std::vector<double>& under_report) {
        PerfCollector perf;
        for (std::size_t launch = 0; launch < under_report.size(); ++launch) {
            perf.set_launch(static_cast<int>(launch));
            for (int pair = 0; pair < 5; ++pair) {
                perf.add(0, judged_block("reference", 4 * pair, 0.1, 1.5, 10));
                perf.add(0, judged_block("candidate", 4 * pair + 1, (0.5 - under_report[launch]) / 10,
                                         1.0 + 0.01 * (pair - 2), 10));
            }
        }
        return perf.compute(allreduce_of(1e6), 1);
    };
    const PerfFigures honest = run({0, 0, 0});
    EXPECT_NEAR(honest.judge_margin_call_ms, 0.002, 1e-9);
    EXPECT_NEAR(honest.pkbw.speedup, 2.0, 1e-9);
    // Six launches of the same honest process: the same margin (the largest excess of one launch grew).
    EXPECT_NEAR(run({0, 0, 0, 0, 0, 0}).judge_margin_call_ms, 0.002, 1e-9);
    // 0.09 ms a block left out in launch 0, 0.03 added in the others: the mean excess (0.01) is within
    // the run's tolerance, nothing is raised as a run, and the margin is 0.09 / 3 a block, 0.003 a call.
    const PerfFigures traded = run({0.09, -0.03, -0.03});
    EXPECT_NEAR(traded.judge_margin_call_ms, 0.003, 1e-9);
    // Whatever it let through, its pooled speedup taken down by the margin is not above the honest one.
    EXPECT_LE(traded.pkbw.speedup * traded.unconfirmed_factor, honest.pkbw.speedup);
    EXPECT_LE(traded.pkbw.ci_low, honest.pkbw.ci_low);
}
