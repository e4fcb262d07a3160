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
    bool empty() const { return !pooled.speedup && !pooled.pkb_speedup && sides.empty(); }
};

StoredPerf stored_perf(const std::vector<PerfSummaryRow>& summaries);

// {speedup, ci_low, ci_high, verdict (name), verdict_code, verdict_band, launches, per_launch,
// pkb_speedup, sides: {reference: {median_ms, ...}, candidate: {...}}}; null when nothing was stored.
nlohmann::json stored_perf_json(const StoredPerf& perf);

// The lines `pkbw show` prints after the trials ("  perf (stored): ..."); nothing when empty.
void print_stored_perf(std::ostream& out, const StoredPerf& perf);

// The runs list's cell: "1.234x faster", "0.91x ambiguous", "-" when no speedup was stored.
std::string speedup_cell(const StoredPerf& perf);

} // namespace pkbw::cli
