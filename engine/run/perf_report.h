// The launcher's side of perf: gathers the ranks' perf_result events, reduces them to pkbw's figure
// (slowest rank per iteration, ABBA blocks, bootstrap interval, verdict) and PKB's (max over ranks of
// per-rank means), adds bandwidth against the problem's work model, and prints or serialises them.
#pragma once

#include "perf_blocks.h"
#include "pkbw/core/perf_stats.h"
#include "pkbw/core/problem.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace pkbw::cli {

// NVLink 4 line rate per GPU and direction (18 links x 25 GB/s; docs/perf.md).
inline constexpr double kNvlinkLineRateGbps = 450.0;

struct SideFigures {
    SampleSummary summary; // slowest-rank iterations over all blocks
    Bandwidth bandwidth;   // at the median
};

struct PerfFigures {
    bool has_pkbw = false;
    SpeedupEstimate pkbw;          // reference vs candidate (eval/perf): replicated.pooled
    ReplicatedEstimate replicated; // over the launches (docs/perf.md "Replication")
    VerdictRule rule;              // the band the verdict used
    int launches = 0;              // launches with blocks of both sides
    int extended_from = 0;         // the planned launches, when an ambiguous verdict extended the run; else 0
    int throttled_blocks = 0;      // dropped: a clock slowdown during the block
    int candidate_blocks = 0;      // the candidate's blocks timed, over every launch
    int floored_blocks =
        0; // of them, raised to the judge's clock (its launch and rank's overhead beyond the reference's)
    // The most the judge's clock lets the candidate's time be below what its blocks took, per call (the
    // hold's tolerance over the calls; the median over the candidate's blocks): a process
    // that under-reports its own time gains at most this (docs/perf.md "The time").
    double judge_margin_call_ms = 0;
    // The factor by which the interval's lower end was taken down for that margin (BlockFigures).
    double unconfirmed_factor = 1;
    // The host backend: CPU loops against a CPU oracle, with no line rate to compare with (the report
    // says so and leaves out the NVLink fractions).
    bool on_host = false;
    // When PKB's protocol and pkbw's disagree in direction: what each saw and why ("" otherwise).
    std::string pkb_disagreement;
    // The graph figure (docs/perf.md "The graph figure"): the same check and floor over the blocks each
    // side replayed from its CUDA graph; has_estimate false when there were none, and then
    // graph_unavailable says why where the run tried (the host backend and --graph off do not).
    BlockFigures graph;
    std::string graph_unavailable;
    // Passes of the graph's blocks over their input sets (the fewest and most over launches; 0 without
    // graph blocks) and rank 0's reason for the first launch's (plan_graph_passes).
    int graph_passes_low = 0, graph_passes_high = 0;
    std::string graph_passes_reason;
    // The launched blocks' figures, whichever figure is the headline.
    BlockFigures launched;
    // Which figure `pkbw`, `replicated`, `sides` and the counts above are (docs/perf.md "A method per
    // kernel size"): "launched", or "graph" where both sides' calls take under kGraphHeadlineBelowMs of
    // device time (the graph's blocks; there the host's launches and their jitter are most of a launched
    // call's time, and the graph's replays are what replicates); the other figure is reported beside it.
    // Why, in words.
    std::string headline = "launched";
    std::string headline_reason;
    // Why the run's speedup is not a result (speedup_withheld_reason of its status: "timing not trusted
    // (invalid_timing)"), "" when it is: the report then prints no verdict, only the figures for
    // inspection, and --json carries the reason as perf.withheld.
    std::string withheld;
    std::map<std::string, SideFigures> sides;
    std::optional<PkbSpeedup> pkb;             // PKB-compatible figure
    std::map<std::string, double> pkb_side_ms; // dryrun: the one side's PKB figure
    CollectiveKind collective = CollectiveKind::None;
    double collective_bytes = 0;
    int world_size = 0;
    nlohmann::json clocks = nlohmann::json::object(); // rank -> {start, end, device}
    double calibrated_busbw_gbps = 0; // this machine's measured peak for the collective (pkbw calibrate)
    // The least time the problem's work can take here (check_plausibility); floor_ms 0: none.
    PlausibilityFloor floor;
    bool below_floor = false; // the candidate's pkbw median is below floor.floor_ms
    // Lines for the run's warnings: "candidate median X ms is below the plausibility floor Y ms ...".
    std::vector<std::string> warnings;
    // Per side, the per-call samples its worker process reported (device events around each call):
    // the distribution, never the headline (docs/perf.md).
    std::map<std::string, SampleSummary> call_samples;
    // Per side, the median over its blocks (and ranks) of the share of the block's device span during
    // which its process was still queueing calls (its own account): near 1, the host's launches set the
    // pace and the time per call moves with the host's CPU; well below 1, the device does (the calls
    // were queued ahead of it). The reference's is trusted; the candidate's is what its process says.
    std::map<std::string, double> enqueue_share;
    // Rank 0's timing_plan event (calls per block, pairs, inputs, round trip, containment), or null.
    nlohmann::json plan;
};

// Sets the floor of `work` on a machine with `peaks` and flags a candidate median below it (a time
// this machine cannot produce: a broken timer, work skipped on some calls, a wrong work model).
void check_plausibility(PerfFigures& figures, const WorkModel& work, const MachinePeaks& peaks);

// When PKB's figure and pkbw's point different ways (pkbw's verdict faster or slower, PKB's speedup on
// the other side of 1): both figures, how the methods differ, and which side the difference in method
// costs more. "" when they agree.
std::string explain_pkb_disagreement(const PerfFigures& figures);

// Below this device time a call (ms, the graph's blocks, on both sides) the graph figure is the headline.
constexpr double kGraphHeadlineBelowMs = 0.020;

// The share of a block's device span (enqueue_ms / span_ms) from which a side reads as launch-bound.
constexpr double kLaunchBoundShare = 0.8;
// One line per side whose blocks were launch-bound (PerfFigures::enqueue_share at or above
// kLaunchBoundShare; never on the host backend); empty when none.
std::vector<std::string> launch_bound_notes(const PerfFigures& figures);

// The graph figure's median time per call of `side` (0 when none).
double graph_median_ms(const PerfFigures& figures, const std::string& side);
// The report's lines for the graph figure: the figure, or why there is none, and a note when its
// verdict differs from the launched blocks'.
std::vector<std::string> graph_lines(const PerfFigures& figures);
// The text of the info flag a run stores when it measured no graph figure ("no graph figure: <why>"),
// so that the store, `pkbw show` and the GUI say why the launched figure stands alone; "" when the run
// has a graph figure or did not try (the host backend, --graph off).
std::string graph_unavailable_flag(const PerfFigures& figures);
// What the judge's clock confirms of the candidate's own time, in words (printed where it moved the
// interval).
std::string unconfirmed_line(const PerfFigures& figures);
// The median time a call of `side` in the launched blocks (ms; 0 without them).
double launched_median_ms(const PerfFigures& figures, const std::string& side);

class PerfCollector {
public:
    // Takes one perf_result event body from `rank`; malformed bodies are ignored (counted).
    void add(int rank, const nlohmann::json& event);
    // Takes one timing_plan event body from `rank` (rank 0's is reported).
    void add_plan(int rank, const nlohmann::json& event);
    // The launch the next events belong to (the launcher runs a perf's launches one after another).
    void set_launch(int launch) { launch_ = launch; }
    // The band of the verdict (min effect, the A/A noise floor).
    void set_rule(const VerdictRule& rule) { rule_ = rule; }
    bool empty() const { return series_.empty(); }
    int malformed() const { return malformed_; }
    const std::vector<PerfSeries>& series() const { return series_; }

    PerfFigures compute(const WorkModel& work, int world_size) const;

private:
    std::vector<PerfSeries> series_;
    std::map<std::string, std::vector<double>> call_samples_;   // side -> every rank's per-call samples
    std::map<std::string, std::vector<double>> enqueue_shares_; // side -> enqueue_ms / span_ms per block
    std::string graph_unavailable_; // the first reason a launch gave for no graph figure
    int graph_passes_low_ = 0, graph_passes_high_ = 0;
    std::string graph_passes_reason_;
    nlohmann::json plan_;
    nlohmann::json clocks_ = nlohmann::json::object();
    int malformed_ = 0;
    int launch_ = 0;
    VerdictRule rule_;
};

nlohmann::json to_json(const PerfFigures& figures);
// A short table: per side median/p5/p95 (ms), busbw and its fraction of the NVLink line rate and of
// the bare NCCL loop when timed (algbw where the busbw factor is 0, at one rank), then the speedup with
// its interval and verdict, PKB's figure, and a warning line per entry of `warnings`.
void print_perf(std::ostream& out, const PerfFigures& figures);

} // namespace pkbw::cli
