// A perf run's timing as the store keeps it (perf_summaries: the pooled figures on side candidate,
// rank -1, read by core's stored_speedup; per side the median and spread), printed by `pkbw show`
// and `pkbw runs`, in text and JSON (docs/cli.md "show", "runs").
#pragma once

#include "pkbw/core/store.h"
#include "pkbw/core/sweep_table.h"

#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace pkbw::cli {

struct StoredPerf {
    StoredSpeedup pooled; // speedup, interval, verdict, band, launches, per launch, PKB's figure
    // Per side ("reference", "candidate", "bare_nccl"): its across-ranks statistics (rank -1) in
    // milliseconds or GB/s: median_ms, mean_ms, p5_ms, p95_ms, algbw_gbps, busbw_gbps, pkb_mean_ms.
    std::map<std::string, std::map<std::string, double>> sides;
    // The run's status: where its speedup is not a result (speedup_is_result false: invalid_timing, a
    // mismatch, ...) every printing below withholds the speedup, says why (speedup_withheld_reason) and
    // shows the figures for inspection only.
    RunStatus status = RunStatus::Pass;
    std::string withheld() const { return speedup_withheld_reason(status); }
    bool empty() const { return !pooled.speedup && !pooled.pkb_speedup && sides.empty(); }
};

StoredPerf stored_perf(const std::vector<PerfSummaryRow>& summaries, RunStatus status);

// {speedup, ci_low, ci_high, verdict (name), verdict_code, verdict_band, launches, per_launch,
// pkb_speedup, sides: {reference: {median_ms, ...}, candidate: {...}}, withheld: the reason or null};
// null when nothing was stored. A withheld run keeps its figures (for inspection) and its verdict is null.
nlohmann::json stored_perf_json(const StoredPerf& perf);

// The lines `pkbw show` prints after the trials ("  perf (stored): ..."); nothing when empty.
void print_stored_perf(std::ostream& out, const StoredPerf& perf);

// The runs list's cell: "1.234x faster", "0.91x ambiguous", "-" when no speedup was stored,
// "untrusted" (invalid_timing) or "withheld" (another status) when the run's speedup is not a result
// (core's speedup_withheld_word, which the GUI's Runs list reads too).
std::string speedup_cell(const StoredPerf& perf);

} // namespace pkbw::cli
