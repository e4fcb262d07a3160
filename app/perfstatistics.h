// The Perf tab's figures, without widgets: pkbw's samples grouped by side and rank; the speedup with
// its interval and verdict (stored, or recomputed for older runs); and the statistics table in words,
// each stored summary row (core's keys such as "p95_ms", "algbw_gbps", "verdict",
// "pkb_speedup.trial_2") as a label a reader knows and a value with its unit, times in the unit the
// plots use (µs or ms), so that the table and the box plot read alike.
#pragma once

#include "pkbw/core/store.h"
#include "pkbw/core/sweep_table.h"
#include "rundata.h"

#include <QString>
#include <map>
#include <vector>

namespace pkbw::app {

// samples[side][rank] -> ms (side 0 reference, 1 candidate), and per (side, block) the per-rank
// vectors: pkbw's own ABBA blocks only (PKB's protocol series and the bare NCCL loop are other
// measurements and stay out of the speedup).
struct GroupedSamples {
    std::map<int, std::vector<double>> per_rank[2];
    std::map<int, std::map<int, std::vector<double>>> per_block[2]; // block -> rank -> samples
};
GroupedSamples group_samples(const RunData& data);

struct PerfFigures {
    bool has_samples = false;
    // The speedup, its 95% interval and verdict: stored (the run's pooled figures) when the run has
    // them, else recomputed from the samples (older runs); `has_figures` false when neither.
    bool has_figures = false;
    bool stored = false;
    double speedup = 0, ci_low = 0, ci_high = 0;
    QString verdict;
    int launches = 1;                     // launches the speedup is pooled over
    int extended_from = 0;                // the planned launches, when an ambiguous verdict extended the run
    std::vector<StoredLaunch> per_launch; // each launch's speedup and interval (stored, or recomputed)
    int slowest_reference_rank = -1, slowest_candidate_rank = -1;
};
PerfFigures compute_perf(const RunData& data);

struct StatisticText {
    QString label; // "95th percentile per iteration"; the key itself for one this table does not know
    QString value; // "12.345 µs", "1.131×", "faster", "312.4 GB/s"
    QString key;   // the stored key, for the tooltip
};

// `microseconds`: times in µs (as the plots when their iterations are under a millisecond), else ms.
StatisticText describe_statistic(const PerfSummaryRow& row, bool microseconds);

// Whether the stored times call for µs: the largest stored per-iteration time is under a millisecond
// (the rule the plots apply to the samples), for runs whose samples are not there to decide.
bool statistics_in_microseconds(const std::vector<PerfSummaryRow>& rows);

} // namespace pkbw::app
