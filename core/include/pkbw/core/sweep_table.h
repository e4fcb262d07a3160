// The paper's table of a sweep, per generation: attempted, correct, faster than the reference,
// fast_p, geomean speedup, failures by kind (docs/sweeps.md "The table"). Computed here, in core, so
// that `pkbw show --sweep ID` (engine/cli/sweep_report.cpp) and the GUI's Sweeps tab print the same
// numbers from the same code.
#pragma once

#include "pkbw/core/sweep_store.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

struct SweepPairView {
    SweepPair pair;
    std::string status; // the run's status, "not run" (pending) or "no run" (pkbw died before recording)
    std::optional<double> speedup; // pkbw's speedup (perf runs that passed)
    bool faster = false;           // the speedup's 95% interval lies above 1 (perf verdict "faster")
};

struct SweepGenerationRow {
    std::string label;
    int attempted = 0; // pairs with a solution file
    int judged = 0;    // pairs with a finished run
    int correct = 0;   // outputs matched (pass, or invalid_timing: correct but its timing untrusted)
    int timed = 0;     // correct pairs with a trusted speedup
    int faster = 0;    // verdict faster
    std::vector<double> speedups; // of the timed pairs
    std::map<std::string, int>
        failures; // status -> count (mismatch, compile_error, ..., "no run", "not run")
    // fast_p: share of the attempted pairs that are correct and have speedup > p (p = 0: correct).
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
