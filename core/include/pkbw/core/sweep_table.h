// The paper's table of a sweep, per generation: attempted, correct, faster than the reference,
// fast_p, geomean speedup, failures by kind (docs/sweeps.md "The table"). Computed here, in core, so
// that `pkbw show --sweep ID` (engine/cli/sweep_report.cpp) and the GUI's Sweeps tab print the same
// numbers from the same code. The rule of fast_p (counts_toward_fast_p) and the reading of a perf
// run's stored figures (stored_speedup) are here too, for the GUI's Generations and Perf tabs.
#pragma once

#include "pkbw/core/perf_stats.h"
#include "pkbw/core/sweep_store.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

// One launch of a perf run as stored ("launch_speedup_<i>", "launch_ci_low_<i>", "launch_ci_high_<i>").
struct StoredLaunch {
    int index = 0;
    double speedup = 0;
    std::optional<double> ci_low, ci_high;
};

// A perf run's pooled figures as it stored them (perf_summaries, side candidate, rank -1). Runs stored
// before the pooled interval lack ci_low/ci_high/launches; runs before the four verdicts stored code 0
// for "within noise", read as same (verdict_from_code).
struct StoredSpeedup {
    std::optional<double> speedup;         // "speedup", finite and > 0
    std::optional<double> ci_low, ci_high; // "speedup_ci_low", "speedup_ci_high": its 95% interval
    std::optional<Verdict> verdict;        // "verdict" (the code, verdict_from_code)
    std::optional<double> band;            // "verdict_band"
    std::optional<int> launches;           // "launches"
    std::vector<StoredLaunch> per_launch;  // in launch order, when stored
    std::optional<double> pkb_speedup;     // "pkb_speedup"
};
StoredSpeedup stored_speedup(const std::vector<PerfSummaryRow>& summaries);

// fast_p's rule for one pair, shared by every surface (CLI table and --json, the GUI's Sweeps and
// Generations tabs, the agent's "fast"): p <= 0 counts a correct pair; p > 0 counts a correct pair
// with a speedup whose 95% interval clears p (ci_low > p, perf_stats' `clears`): a speedup of 1.3
// whose interval reaches down to 0.98 is not faster than 1. A pair without a stored interval (runs
// stored before intervals, PKB's imported speedups) counts when its speedup > p: its point estimate
// is all the store holds, and counting it out would silently zero the fast_p of every older store.
bool counts_toward_fast_p(bool correct, std::optional<double> speedup, std::optional<double> ci_low,
                          double p);
// The largest p a pair counts toward fast_p below (strictly): its ci_low, or its speedup without an
// interval. fast_p steps down at these values.
double fast_bound(double speedup, std::optional<double> ci_low);

struct SweepPairView {
    SweepPair pair;
    std::string status; // the run's status, "not run" (pending) or "no run" (pkbw died before recording)
    std::optional<double> speedup;         // pkbw's pooled speedup (perf runs that passed)
    std::optional<double> ci_low, ci_high; // its stored 95% interval (absent in runs stored before it)
    std::optional<Verdict> verdict;        // its stored verdict
    bool faster = false;                   // verdict faster
};

struct SweepGenerationRow {
    std::string label;
    int attempted = 0; // pairs with a solution file
    int judged = 0;    // pairs with a finished run
    int correct = 0;   // outputs matched (pass, or invalid_timing: correct but its timing untrusted)
    int timed = 0;     // correct pairs with a trusted speedup
    int faster = 0;    // verdict faster
    std::map<std::string, int> verdicts; // verdict name -> count (timed pairs with a stored verdict)
    std::vector<double> speedups;        // of the timed pairs
    // Per timed pair whose fast_bound is finite: that bound (its ci_low; its speedup when stored
    // without an interval). fast_p(p > 0) counts those above p.
    std::vector<double> fast_bounds;
    std::map<std::string, int>
        failures; // status -> count (mismatch, compile_error, ..., "no run", "not run")
    // fast_p: share of the attempted pairs that count toward it (counts_toward_fast_p): p <= 0 the
    // correct ones, p > 0 the timed ones whose fast_bound exceeds p (interval clears p).
    double fast_p(double p) const;
    std::optional<double> geomean() const;
};

struct SweepTable {
    SweepRecord sweep;
    std::vector<SweepGenerationRow> generations;
    std::vector<SweepPairView> pairs;
    int done = 0, total = 0;
};

// Throws StoreError when the store has no such sweep.
SweepTable sweep_table(const Store& store, std::int64_t sweep_id);

// The p of the printed table: 0, 1, 1.5, 2.
std::vector<double> default_fast_p();

} // namespace pkbw
