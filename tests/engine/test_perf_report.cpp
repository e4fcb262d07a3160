// The launcher's perf figures as printed and serialised: bandwidth at one rank and the plausibility
// floor's flag, from synthetic perf_result events.
#include "perf_report.h"

#include <array>
#include <cmath>
#include <gtest/gtest.h>
#include <sstream>

using namespace pkbw;
using namespace pkbw::cli;
using nlohmann::json;

namespace {

json block(const std::string& side, int index, double ms) {
    return {{"event", "perf_result"},
            {"protocol", "pkbw"},
            {"side", side},
            {"block", index},
            {"samples_ms", {ms, ms, ms}}};
}

// One ABBA pair on each of `world` ranks, reference at `reference_ms`, candidate at `candidate_ms`.
PerfCollector collector(int world, double reference_ms, double candidate_ms) {
    PerfCollector perf;
    for (int rank = 0; rank < world; ++rank) {
        perf.add(rank, block("reference", 0, reference_ms));
        perf.add(rank, block("candidate", 1, candidate_ms));
        perf.add(rank, block("candidate", 2, candidate_ms));
        perf.add(rank, block("reference", 3, reference_ms));
    }
    return perf;
}

WorkModel allreduce_of(double bytes) {
    WorkModel work;
    work.collective = CollectiveKind::AllReduce;
    work.collective_bytes = bytes;
    work.memory_bytes = 2 * bytes;
    return work;
}

std::string printed(const PerfFigures& figures) {
    std::ostringstream out;
    print_perf(out, figures);
    return out.str();
}

MachinePeaks h200() {
    auto peaks = documented_peaks("NVIDIA H200");
    EXPECT_TRUE(peaks);
    return peaks.value_or(MachinePeaks{});
}

} // namespace

TEST(PerfReport, OneRankShowsAlgbwNeverZeroBusbw) {
    const WorkModel work = allreduce_of(1e9);
    const PerfFigures figures = collector(1, 2.0, 1.0).compute(work, 1);
    ASSERT_EQ(figures.sides.count("candidate"), 1u);
    EXPECT_DOUBLE_EQ(figures.sides.at("candidate").bandwidth.busbw_gbps, 0);
    EXPECT_DOUBLE_EQ(figures.sides.at("candidate").bandwidth.algbw_gbps, 1000);

    const json j = to_json(figures);
    const json& candidate = j["sides"]["candidate"];
    EXPECT_DOUBLE_EQ(candidate["algbw_gbps"].get<double>(), 1000);
    EXPECT_FALSE(candidate.contains("busbw_gbps")) << candidate.dump();
    EXPECT_FALSE(candidate.contains("busbw_fraction_of_nvlink")) << candidate.dump();
    EXPECT_EQ(candidate["busbw_note"], "busbw factor is 0 at world size 1: algbw_gbps only");

    const std::string text = printed(figures);
    EXPECT_NE(text.find("algbw  1000.0 GB/s (busbw factor 0 at W=1)"), std::string::npos) << text;
    EXPECT_NE(text.find("algbw   500.0 GB/s (busbw factor 0 at W=1)"), std::string::npos) << text;
    EXPECT_EQ(text.find("  busbw "), std::string::npos) << text;
    EXPECT_EQ(text.find(" 0.0 GB/s"), std::string::npos) << text;
}

TEST(PerfReport, TwoRanksShowBusbw) {
    const PerfFigures figures = collector(2, 2.0, 1.0).compute(allreduce_of(1e9), 2);
    const json j = to_json(figures);
    EXPECT_DOUBLE_EQ(j["sides"]["candidate"]["busbw_gbps"].get<double>(), 1000); // factor 1 at n=2
    EXPECT_FALSE(j["sides"]["candidate"].contains("busbw_note"));
    const std::string text = printed(figures);
    EXPECT_NE(text.find("busbw  1000.0 GB/s"), std::string::npos) << text;
    EXPECT_EQ(text.find("algbw"), std::string::npos) << text;
}

TEST(PerfReport, CandidateBelowTheFloorIsFlaggedEverywhere) {
    // 1 GiB all-reduce on two H200s: the floor is 0.5 x 2^30 B / 374 GB/s = 1.44 ms; the reference's
    // 3.3 ms is plausible, a candidate at 0.1 ms is not.
    const WorkModel work = allreduce_of(1073741824.0);
    PerfFigures figures = collector(2, 3.3, 0.1).compute(work, 2);
    check_plausibility(figures, work, h200());
    EXPECT_EQ(figures.floor.term, FloorTerm::Communication);
    EXPECT_NEAR(figures.floor.floor_ms, 0.5 * 1073741824.0 / 374e9 * 1e3, 1e-9);
    EXPECT_TRUE(figures.below_floor);
    ASSERT_EQ(figures.warnings.size(), 1u);
    EXPECT_EQ(
        figures.warnings[0],
        "candidate median 0.1 ms is below the plausibility floor 1.435 ms (communication: allreduce of "
        "1073741824 bytes, busbw factor 1, at 374 GB/s busbw (measured peer copy), x0.5 margin): faster "
        "than this machine can go");

    const json j = to_json(figures);
    EXPECT_EQ(j["warnings"], json::array({figures.warnings[0]}));
    EXPECT_EQ(j["plausibility"]["below_floor"], true);
    EXPECT_EQ(j["plausibility"]["term"], "communication");
    EXPECT_NEAR(j["plausibility"]["floor_ms"].get<double>(), figures.floor.floor_ms, 1e-12);

    const std::string text = printed(figures);
    EXPECT_NE(text.find("\n    warning: " + figures.warnings[0] + "\n"), std::string::npos) << text;
}

TEST(PerfReport, PlausibleCandidateAndHostBackendAreNotFlagged) {
    const WorkModel work = allreduce_of(1073741824.0);
    PerfFigures figures = collector(2, 3.3, 2.9).compute(work, 2);
    check_plausibility(figures, work, h200());
    EXPECT_GT(figures.floor.floor_ms, 0);
    EXPECT_FALSE(figures.below_floor);
    EXPECT_TRUE(figures.warnings.empty());
    EXPECT_EQ(to_json(figures)["plausibility"]["below_floor"], false);
    EXPECT_EQ(printed(figures).find("warning"), std::string::npos);

    // The host backend has no device rates: no floor, whatever the time, and the JSON says why.
    MachinePeaks host;
    host.source = "the host backend (no device rates)";
    PerfFigures fast = collector(2, 3.3, 1e-6).compute(work, 2);
    check_plausibility(fast, work, host);
    EXPECT_FALSE(fast.below_floor);
    EXPECT_TRUE(fast.warnings.empty());
    EXPECT_EQ(to_json(fast)["plausibility"]["note"],
              "no floor: no peak rates known for the host backend (no device rates)");
}

namespace {
// One block of one call-count with the judge's time of it (what the ranks send since the launches).
json judged_block(const std::string& side, int index, double device_call_ms, double judge_ms, int calls) {
    return {{"event", "perf_result"},         {"protocol", "pkbw"},   {"side", side},  {"block", index},
            {"samples_ms", {device_call_ms}}, {"judge_ms", judge_ms}, {"calls", calls}};
}
} // namespace

TEST(PerfReport, HostBackendSaysWhatItsFiguresMeanAndOmitsTheLineRate) {
    PerfFigures figures = collector(2, 2.0, 1.0).compute(allreduce_of(1e9), 2);
    figures.on_host = true;
    const json j = to_json(figures);
    EXPECT_TRUE(j["sides"]["candidate"].contains("busbw_gbps"));
    EXPECT_FALSE(j["sides"]["candidate"].contains("busbw_fraction_of_nvlink")) << j.dump();
    figures.plan = {{"calls_per_block", 10}, {"pairs", 1}};
    const std::string text = printed(figures);
    EXPECT_EQ(text.find("of NVLink"), std::string::npos) << text;
    EXPECT_NE(text.find("host backend: CPU loops timed against a CPU reference"), std::string::npos) << text;
}

TEST(PerfReport, TheCandidatesOwnTimeIsHeldToTheJudgesClock) {
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
TEST(PerfReport, AReferenceSpikeIsNotCreditedToTheCandidate) {
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
TEST(PerfReport, JitterLikeTheReferencesRaisesNoHonestBlockAndAForgerGainsAtMostTheTolerance) {
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
    // Held block by block to its judge time less the reference's median overhead (and 0.02 ms): nearly
    // its true time, whatever the level test's tolerance. (Its samples, 0.2 ms of a 0.5 ms block, are
    // within what samples_disagree allows a block, so it keeps the median's allowance, not the least.)
    EXPECT_GE(forged.sides.at("candidate").summary.median, (0.5 - tolerance) / 10);
    EXPECT_NEAR(forged.sides.at("candidate").summary.median, 0.048, 1e-9);
    EXPECT_LT(forged.pkbw.speedup, 1.0 / (0.05 - tolerance / 10) + 1e-9);
}

// On an oversubscribed host a request waits milliseconds for a core: the reference's median overhead
// grows to a good part of a short block. A process the level test raised is held to its judge time less
// the reference's least overhead, not that median, so a clock slowed tenfold is not let off by the load
// (with the median, forge_clock read 4.5x its own clock on a loaded CI host, about half its true time).
TEST(PerfReport, UnderLoadAForgerIsHeldToTheReferencesBestRequestNotItsMedian) {
    const double reference_overheads[] = {0.3, 5.0, 6.0, 7.0, 6.5};
    const double candidate_overheads[] = {4.0, 6.0, 0.4, 5.0, 3.0};
    PerfCollector perf;
    for (int pair = 0; pair < 5; ++pair) {
        // 20 calls of 0.5 ms: 10 ms a block; the candidate's clock says a tenth of it.
        perf.add(0, judged_block("reference", 4 * pair, 1.0, 20.0 + reference_overheads[pair], 20));
        perf.add(0, judged_block("candidate", 4 * pair + 1, 0.05, 10.0 + candidate_overheads[pair], 20));
    }
    const PerfFigures forged = perf.compute(allreduce_of(1e6), 1);
    EXPECT_EQ(forged.floored_blocks, 5);
    // Each block: (10 + its overhead - 0.3 - 0.02) / 20; the median block's overhead is 4.0 ms.
    EXPECT_NEAR(forged.sides.at("candidate").summary.median, (10.0 + 4.0 - 0.32) / 20, 1e-9);
    EXPECT_GE(forged.sides.at("candidate").summary.median, 10 * 0.05);
    EXPECT_LT(forged.pkbw.speedup, 2.0);
    // An honest candidate on the same host, its requests as erratic as the reference's, is not raised by
    // the level test and keeps the median's allowance: no block is held above its own time by more than
    // its overhead beyond the reference's median.
    PerfCollector honest;
    for (int pair = 0; pair < 5; ++pair) {
        honest.add(0, judged_block("reference", 4 * pair, 1.0, 20.0 + reference_overheads[pair], 20));
        honest.add(0, judged_block("candidate", 4 * pair + 1, 0.5, 10.0 + reference_overheads[4 - pair], 20));
    }
    const PerfFigures h = honest.compute(allreduce_of(1e6), 1);
    EXPECT_NEAR(h.sides.at("candidate").summary.median, 0.5, 1e-9);
    EXPECT_NEAR(h.pkbw.speedup, 2.0, 1e-9);
}

// Over launches the hold tests the run as a whole: one launch whose five candidate blocks happen to carry
// more overhead than its reference's (beyond that launch's own tolerance) is not raised when the excess
// over the run is within the run's tolerance; a process that under-reports in every launch still is.
TEST(PerfReport, ALaunchThatExceedsByChanceIsNotRaisedWhenTheRunDoesNot) {
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
TEST(PerfReport, ARaisedProcessWhoseSamplesAreItsBlocksKeepsTheMediansAllowance) {
    const double reference_overheads[] = {0.5, 0.6, 0.7, 0.6, 0.5}; // median 0.6, least 0.5
    const double candidate_overheads[] = {1.6, 1.7, 1.8, 1.7, 1.6}; // median 1.7: raised
    PerfCollector perf;
    for (int pair = 0; pair < 5; ++pair) {
        perf.add(0, judged_block("reference", 4 * pair, 1.0, 20.0 + reference_overheads[pair], 20));
        perf.add(0, judged_block("candidate", 4 * pair + 1, 0.5, 10.0 + candidate_overheads[pair], 20));
    }
    const PerfFigures f = perf.compute(allreduce_of(1e6), 1);
    EXPECT_EQ(f.floored_blocks, 5);
    // The median block (1.7 ms of overhead): (11.7 - 0.6 - 0.02) / 20; with the least, (11.7 - 0.5 - 0.02) / 20.
    EXPECT_NEAR(f.sides.at("candidate").summary.median, (11.7 - 0.62) / 20, 1e-9);
}

// A rank raised over the run is held to the reference's least overhead in every launch, also in one
// whose own excess stayed within that launch's tolerance (found by the red team on the host backend: such
// a launch kept the median's allowance and let through 0.81 of its true time).
TEST(PerfReport, EveryLaunchOfARankRaisedOverTheRunIsHeldToTheReferencesBestRequest) {
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
TEST(PerfReport, TheMarginCoversOneLaunchsUnderReportOverTheLaunchesAndDoesNotGrowWithThem) {
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

TEST(PerfReport, LaunchesArePooledAndADisagreementWithPkbIsExplained) {
    PerfCollector perf;
    for (int launch = 0; launch < 3; ++launch) {
        perf.set_launch(launch);
        const double shift = 1.0 + 0.01 * launch;
        perf.add(0, block("reference", 0, 2.0 * shift));
        perf.add(0, block("candidate", 1, 1.0));
        perf.add(0, block("candidate", 2, 1.0));
        perf.add(0, block("reference", 3, 2.0 * shift));
    }
    // PKB's protocol, first launch: the candidate slower there.
    perf.set_launch(0);
    perf.add(
        0,
        {{"event", "perf_result"}, {"protocol", "pkb"}, {"side", "reference"}, {"samples_ms", {1.0, 1.0}}});
    perf.add(
        0,
        {{"event", "perf_result"}, {"protocol", "pkb"}, {"side", "candidate"}, {"samples_ms", {2.5, 2.5}}});
    const PerfFigures f = perf.compute(allreduce_of(1e6), 1);
    EXPECT_EQ(f.launches, 3);
    EXPECT_TRUE(f.replicated.replicated);
    ASSERT_EQ(f.replicated.launches.size(), 3u);
    EXPECT_NEAR(f.replicated.launches[2].speedup, 2.04, 1e-9);
    EXPECT_GT(f.pkbw.speedup, 2.0);
    EXPECT_EQ(f.pkbw.verdict, Verdict::Faster);
    ASSERT_TRUE(f.pkb);
    EXPECT_NE(f.pkb_disagreement.find("PKB's protocol says 0.400x"), std::string::npos) << f.pkb_disagreement;
    EXPECT_NE(f.pkb_disagreement.find("the candidate pays more under PKB's method"), std::string::npos)
        << f.pkb_disagreement;
    EXPECT_NE(to_json(f)["pkbw"]["pkb_disagreement"].get<std::string>().find("0.400x"), std::string::npos);
}

namespace {
json queued_block(const std::string& side, int index, double span_ms, double enqueue_ms) {
    json block = judged_block(side, index, span_ms / 50, span_ms + 0.4, 50);
    block["span_ms"] = span_ms;
    block["enqueue_ms"] = enqueue_ms;
    return block;
}
} // namespace

// Problem 12's reference on the H200 (W=1): three launches a call (NCCL, a permute, cuBLAS), queued no
// faster than the device ran them (21 us a call against 12.5 us of kernels), while the candidate's one
// kernel was queued ahead of the device. The report names the launch-bound side, never on the host.
TEST(PerfReport, ALaunchBoundSideIsNamedAndADeviceBoundOneIsNot) {
    PerfCollector perf;
    perf.add(0, queued_block("reference", 0, 1.05, 1.04));
    perf.add(0, queued_block("candidate", 1, 0.80, 0.15));
    perf.add(0, queued_block("candidate", 2, 0.80, 0.16));
    perf.add(0, queued_block("reference", 3, 1.10, 1.08));
    PerfFigures f = perf.compute(allreduce_of(1e6), 1);
    ASSERT_EQ(f.enqueue_share.count("reference"), 1u);
    EXPECT_GT(f.enqueue_share.at("reference"), 0.95);
    EXPECT_LT(f.enqueue_share.at("candidate"), 0.25);
    const auto notes = launch_bound_notes(f);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("the reference is launch-bound"), std::string::npos) << notes[0];
    EXPECT_NE(printed(f).find("note: the reference is launch-bound"), std::string::npos) << printed(f);
    EXPECT_GT(to_json(f)["enqueue_share"]["reference"].get<double>(), 0.95);
    f.on_host = true; // a CPU loop's calls run as they are queued: no launch queue to speak of
    EXPECT_TRUE(launch_bound_notes(f).empty());
    // Without enqueue times (older workers, PKB's Python path) nothing is said.
    const PerfFigures plain = collector(1, 2.0, 1.0).compute(allreduce_of(1e6), 1);
    EXPECT_TRUE(plain.enqueue_share.empty());
    EXPECT_TRUE(launch_bound_notes(plain).empty());
}

namespace {
json graph_block(const std::string& side, int index, double device_call_ms, double judge_ms, int calls) {
    json block = judged_block(side, index, device_call_ms, judge_ms, calls);
    block["protocol"] = "graph";
    return block;
}
} // namespace

// The graph figure (docs/perf.md "The graph figure"): its own estimate from the blocks replayed from CUDA
// graphs, held to the judge's clock as the launched ones. Calls of a few microseconds on both sides make it
// the headline ("A method per kernel size"), with the launched figure beside it and a note when the two
// verdicts differ; longer calls keep the launched figure as the headline, the graph's beside it.
TEST(PerfReport, TheGraphFigureStandsBesideTheLaunchedOneAndIsHeldToTheJudgesClock) {
    auto run = [](double scale) {
        PerfCollector perf;
        // Launched blocks: the reference launch-bound at 2 units a call, the candidate 1: "faster".
        perf.add(0, judged_block("reference", 0, 0.002 * scale, 0.11 * scale, 50));
        perf.add(0, judged_block("candidate", 1, 0.001 * scale, 0.06 * scale, 50));
        perf.add(0, judged_block("candidate", 2, 0.001 * scale, 0.06 * scale, 50));
        perf.add(0, judged_block("reference", 3, 0.002 * scale, 0.11 * scale, 50));
        // Graph blocks: the device's time alone, 1 unit a call on both sides ("same")...
        perf.add(0, graph_block("reference", 4, 0.001 * scale, 0.06 * scale, 50));
        perf.add(0, graph_block("candidate", 5, 0.001 * scale, 0.06 * scale, 50));
        perf.add(0, graph_block("candidate", 6, 0.001 * scale, 0.06 * scale, 50));
        perf.add(0, graph_block("reference", 7, 0.001 * scale, 0.06 * scale, 50));
        return perf.compute(allreduce_of(1e6), 1);
    };
    // Calls of 1 us of device time on both sides (2 and 1 us launched): the graph's replays are the headline.
    PerfFigures f = run(1);
    ASSERT_TRUE(f.has_pkbw);
    ASSERT_TRUE(f.graph.has_estimate);
    EXPECT_EQ(f.headline, "graph");
    EXPECT_NE(f.headline_reason.find("1.0 us (reference) and 1.0 us (candidate) of device time, under 20 us"),
              std::string::npos)
        << f.headline_reason;
    EXPECT_NEAR(f.pkbw.speedup, 1.0, 1e-9);
    // The judge's clock confirms a 1 us call only to within 0.4 us (the least tolerance, 0.02 ms, over 50
    // calls): the interval's lower end allows for it, so identical device times read "ambiguous", not
    // "same", and the report says why.
    EXPECT_NEAR(f.judge_margin_call_ms, 0.0004, 1e-12);
    EXPECT_NEAR(f.unconfirmed_factor, 0.001 / 0.0014, 1e-9);
    EXPECT_NEAR(f.pkbw.ci_low, 0.001 / 0.0014, 1e-9);
    EXPECT_EQ(f.pkbw.verdict, Verdict::Ambiguous);
    EXPECT_NE(printed(f).find("confirms the candidate's own time to within 0.40 us a call (40% of it)"),
              std::string::npos)
        << printed(f);
    EXPECT_NEAR(f.launched.replicated.pooled.speedup, 2.0, 1e-9);
    EXPECT_EQ(f.launched.replicated.pooled.verdict, Verdict::Faster);  // 2x stands beyond the margin
    EXPECT_NEAR(f.sides.at("reference").summary.median, 0.001, 1e-12); // the headline's blocks
    EXPECT_EQ(f.sides.at("reference").summary.count, 2u);
    EXPECT_NEAR(launched_median_ms(f, "reference"), 0.002, 1e-12);
    auto lines = graph_lines(f);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_NE(lines[0].find("the figure above is the graph figure"), std::string::npos) << lines[0];
    EXPECT_NE(lines[1].find("launched figure (each call launched by its process"), std::string::npos)
        << lines[1];
    EXPECT_NE(lines[2].find("the launched blocks say faster (2.000x) and the graph says ambiguous"),
              std::string::npos)
        << lines[2];
    json j = to_json(f);
    EXPECT_EQ(j["headline"], "graph");
    EXPECT_EQ(j["pkbw"]["verdict"], "ambiguous");
    EXPECT_NEAR(j["pkbw"]["unconfirmed_factor"].get<double>(), 0.001 / 0.0014, 1e-9);
    EXPECT_EQ(j["launched"]["verdict"], "faster");
    EXPECT_EQ(j["graph"]["verdict"], "ambiguous");

    // Calls of 50 us of device time: the launched figure stays the headline, the graph's beside it.
    f = run(50);
    EXPECT_EQ(f.headline, "launched");
    EXPECT_TRUE(f.headline_reason.empty());
    EXPECT_NEAR(f.pkbw.speedup, 2.0, 1e-9);
    EXPECT_NEAR(f.graph.replicated.pooled.speedup, 1.0, 1e-9);
    EXPECT_EQ(f.graph.replicated.pooled.verdict, Verdict::Same);
    EXPECT_EQ(f.sides.at("reference").summary.count, 2u); // graph blocks are not in the launched figure
    EXPECT_NEAR(graph_median_ms(f, "candidate"), 0.05, 1e-12);
    lines = graph_lines(f);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[0].find("graph figure (each side's block replayed"), std::string::npos) << lines[0];
    EXPECT_NE(lines[1].find("the launched blocks say faster (2.000x) and the graph says same"),
              std::string::npos)
        << lines[1];
    j = to_json(f);
    EXPECT_EQ(j["headline"], "launched");
    EXPECT_EQ(j["graph"]["verdict"], "same");
    EXPECT_NE(printed(f).find("graph figure (each side's block replayed"), std::string::npos) << printed(f);

    // ... and a candidate whose process under-reports its graph blocks is held to the judge's clock.
    PerfCollector forged;
    forged.add(0, graph_block("reference", 0, 0.010, 0.52, 50));
    forged.add(0, graph_block("candidate", 1, 0.0001, 0.52, 50));
    forged.add(0, graph_block("candidate", 2, 0.0001, 0.52, 50));
    forged.add(0, graph_block("reference", 3, 0.010, 0.52, 50));
    const PerfFigures g = forged.compute(allreduce_of(1e6), 1);
    ASSERT_TRUE(g.graph.has_estimate);
    EXPECT_FALSE(g.has_pkbw);
    // Raised by the excess overhead (0.515 - 0.02 ms) less the tolerance (0.02): 0.0001 + 0.475 / 50 ms.
    EXPECT_NEAR(g.graph.replicated.pooled.speedup, 0.010 / 0.0096, 1e-9);
    EXPECT_EQ(g.graph.floored_blocks, 2);

    // No graph figure: the reason is reported, in the text and in --json.
    PerfCollector none;
    none.add(0, block("reference", 0, 2.0));
    none.add(0, block("candidate", 1, 1.0));
    none.add(
        0, {{"event", "perf_result"},
            {"protocol", "graph"},
            {"side", "candidate"},
            {"unavailable", "candidate's calls cannot be captured in a CUDA graph: cudaStreamSynchronize"}});
    const PerfFigures n = none.compute(allreduce_of(1e6), 1);
    EXPECT_FALSE(n.graph.has_estimate);
    EXPECT_EQ(none.malformed(), 0);
    EXPECT_NE(printed(n).find("graph figure: none (candidate's calls cannot be captured"), std::string::npos)
        << printed(n);
    EXPECT_NE(to_json(n)["graph"]["unavailable"].get<std::string>().find("cudaStreamSynchronize"),
              std::string::npos);
}

// Passes (docs/perf.md "The graph figure"): the graph's blocks of microsecond calls replay 32 passes
// over their 50 sets, 1,600 calls, so the least tolerance (0.02 ms a block) is 0.0125 us of a 1 us call
// and identical device times read "same" where a block of 50 calls left them "ambiguous" (above). The
// report says the passes read copies, and the JSON and the reason carry them.
TEST(PerfReport, GraphPassesConfirmMicrosecondCallsAndAreSaid) {
    PerfCollector perf;
    perf.add(0, judged_block("reference", 0, 0.002, 0.11, 50));
    perf.add(0, judged_block("candidate", 1, 0.002, 0.11, 50));
    perf.add(0, judged_block("candidate", 2, 0.002, 0.11, 50));
    perf.add(0, judged_block("reference", 3, 0.002, 0.11, 50));
    for (int b = 4; b < 8; ++b) {
        const std::string side = b == 4 || b == 7 ? "reference" : "candidate";
        json block = graph_block(side, b, 0.001, 1.6 + 0.06, 1600);
        block["passes"] = 32;
        block["passes_reason"] =
            "32 passes: a pass of 50 calls takes 0.050 ms of device time, a block 1.6 ms";
        perf.add(0, block);
    }
    json plan = {{"calls_per_block", 50}, {"pairs", 1}, {"checked", true}};
    perf.add_plan(0, plan);
    const PerfFigures f = perf.compute(allreduce_of(1e6), 1);
    ASSERT_TRUE(f.graph.has_estimate);
    EXPECT_EQ(f.headline, "graph");
    EXPECT_NEAR(f.judge_margin_call_ms, 0.02 / 1600, 1e-12);
    EXPECT_EQ(f.pkbw.verdict, Verdict::Same) << f.pkbw.ci_low << " " << f.pkbw.ci_high;
    EXPECT_EQ(f.graph_passes_low, 32);
    EXPECT_EQ(f.graph_passes_high, 32);
    const auto lines = graph_lines(f);
    const auto said = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
        return line.find("the graph's blocks are 32 passes over their 50 input sets (32 passes: a pass") !=
               std::string::npos;
    });
    ASSERT_NE(said, lines.end()) << printed(f);
    EXPECT_NE(said->find("reads copies of the sets at addresses of their own"), std::string::npos) << *said;
    const json j = to_json(f);
    EXPECT_EQ(j["graph"]["passes"], 32);
    EXPECT_NE(j["graph"]["passes_reason"].get<std::string>().find("a block 1.6 ms"), std::string::npos);
}
