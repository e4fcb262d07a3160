// The launcher's perf figures as printed and serialised: bandwidth at one rank and the plausibility
// floor's flag, from synthetic perf_result events.
#include "perf_report.h"
#include "perf_test_events.h"

#include <array>
#include <cmath>
#include <gtest/gtest.h>
#include <sstream>

using namespace pkbw;
using namespace pkbw::cli;
using nlohmann::json;
using namespace pkbw::cli::test;

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

    // The same figures of a run whose speedup is no result (invalid_timing): no verdict in the report or
    // in --json, PKB's figure for inspection only, the reason in perf.withheld.
    PerfFigures withheld = f;
    withheld.withheld = "timing not trusted (invalid_timing)";
    const std::string text = printed(withheld);
    EXPECT_NE(text.find("speedup withheld: timing not trusted (invalid_timing); for inspection only"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("faster"), std::string::npos) << text;
    EXPECT_EQ(text.find("95% CI"), std::string::npos) << text;
    EXPECT_NE(text.find("(for inspection only: the run's speedup is withheld)"), std::string::npos) << text;
    const json j = to_json(withheld);
    EXPECT_EQ(j["withheld"], "timing not trusted (invalid_timing)");
    EXPECT_TRUE(j["pkbw"]["verdict"].is_null());
    EXPECT_GT(j["pkbw"]["speedup"].get<double>(), 2.0); // the figures stay, for inspection
    EXPECT_TRUE(to_json(f)["withheld"].is_null());
    EXPECT_EQ(to_json(f)["pkbw"]["verdict"], "faster");
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
    // ... and as the info flag the run stores (the H200 store's run of problem 12 said nothing of it).
    EXPECT_EQ(graph_unavailable_flag(n),
              "no graph figure: candidate's calls cannot be captured in a CUDA graph: cudaStreamSynchronize");
    EXPECT_EQ(graph_unavailable_flag(g), "");             // a graph figure
    EXPECT_EQ(graph_unavailable_flag(PerfFigures{}), ""); // did not try
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
