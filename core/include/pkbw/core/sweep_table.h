// The paper's table of a sweep, per generation: attempted, correct, faster than the reference,
// fast_p, geomean speedup, failures by kind (docs/sweeps.md "The table"). Computed here, in core, so
// that `pkbw show --sweep ID` (engine/sweep/sweep_report.cpp) and the GUI's Sweeps tab print the same
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
    std::optional<int> extended_from;      // "extended_from": the planned launches of a run an ambiguous
                                           // verdict extended (docs/perf.md "One look")
    std::vector<StoredLaunch> per_launch;  // in launch order, when stored
    std::optional<double> pkb_speedup;     // "pkb_speedup"
};
StoredSpeedup stored_speedup(const std::vector<PerfSummaryRow>& summaries);

// Whether a run's speedup is a result: only a clean perf run (status pass) has timing pkbw trusts.
// invalid_timing (a timed call's output failed its re-check, device work ran off the timed stream,
// the candidate held the GPU while the reference ran), a mismatch, an error or a run still going
// never shows its figures as a speedup: every surface (the CLI's tables, the GUI's Perf headline,
// Runs list, matrix, Sweeps and Generations, exports) withholds them and says why.
bool speedup_is_result(RunStatus status);
// Why a run's speedup is withheld, in a few words ("timing not trusted (invalid_timing)", "outputs
// wrong (mismatch)", "still running"); "" when it is a result.
std::string speedup_withheld_reason(RunStatus status);
// The word a table shows in place of a stored speedup that is not a result: "untrusted" (invalid_timing:
// the timing itself failed a check) or "withheld" (any other status); "" when it is a result. The CLI's
// `pkbw runs` and the GUI's Runs list and trajectories read it.
std::string speedup_withheld_word(RunStatus status);

// One attempted pair (or matrix cell) as every paper figure reads it.
struct PairOutcome {
    bool correct = false;                  // a clean pass (speedup_is_result)
    std::optional<double> speedup;         // pkbw's pooled speedup, or PKB's for an imported PKB run
    std::optional<double> ci_low, ci_high; // its stored 95% interval (absent: older runs, PKB's)
    std::optional<Verdict> verdict;        // its stored verdict (verdict_from_code)
    std::optional<double> pkb_speedup;     // PKB's figure of the same run, when stored beside pkbw's
};

// pkbw and PKB point in opposite directions for the same run (one faster than the reference beyond
// the default band of 5%, the other slower beyond it): 1.13x against PKB's 0.69x. Such a pair is
// shown as disputed and counts toward no fast_p with p >= 1.
bool pkb_disagrees(const PairOutcome& pair);

// fast_p's rule for one pair, shared by every surface (CLI table and --json, the GUI's Sweeps and
// Generations tabs): p <= 0 counts a correct pair. For p > 0 a correct pair counts by its verdict:
// for p >= 1 only a verdict of faster whose 95% interval clears p (ci_low > p: a speedup of 1.3 whose
// interval reaches down to 0.98 is not faster than 1; 1.03 within the 5% band is "same", not
// faster), for 0 < p < 1 an interval that clears p, and never a pair pkb_disagrees with. A pair
// stored without an interval (runs stored before intervals, PKB's imported speedups) counts when its
// speedup > p: its point estimate is all the store holds.
bool counts_toward_fast_p(const PairOutcome& pair, double p);
// The largest p the pair counts toward fast_p below (strictly); 0 when it counts toward none with
// p > 0. fast_p steps down at these values.
double fast_bound(const PairOutcome& pair);
// The older form (the agent's "fast"): a pair with that speedup and interval, verdict from the
// interval under the default rule.
bool counts_toward_fast_p(bool correct, std::optional<double> speedup, std::optional<double> ci_low,
                          double p);
double fast_bound(double speedup, std::optional<double> ci_low);

// The paper's figures over a fixed set of attempted pairs (its denominator): correct, faster,
// fast_p, the geometric-mean speedup with its n. Computed here once; the sweep table (and so
// `pkbw show --sweep`), the GUI's Sweeps and Generations tabs read these.
struct PaperFigures {
    int attempted = 0; // the denominator: pairs attempted
    int correct = 0;   // clean passes (invalid_timing is not: its outputs or timing were not trusted)
    int timed = 0;     // correct pairs with a speedup
    int faster = 0;    // verdict faster and not disputed by PKB
    int disputed = 0;  // timed pairs pkb_disagrees with
    std::vector<double> speedups; // of the timed pairs (the geomean's n is their count)
    // Per timed pair whose fast_bound is above 0: that bound. fast_p(p > 0) counts those above p.
    std::vector<double> fast_bounds;

    void add(const PairOutcome& pair); // one more attempted pair
    double fast_p(double p) const;     // share of the attempted pairs counting toward fast_p
    std::optional<double> geomean() const;
    int geomean_n() const { return static_cast<int>(speedups.size()); }
    // The fast_p curve as steps (p, fast_p(p)) to draw left-continuous (each value holds from its p
    // to the next): fast_p(0) at 0, then fast_p just above 0 (correct pairs without a speedup, or
    // whose interval does not clear any p > 0, drop out there), then at each distinct bound; it ends
    // at zero at p_end. Empty when nothing was attempted.
    std::vector<std::pair<double, double>> fast_p_steps(double p_end) const;
};

struct SweepPairView {
    SweepPair pair;
    std::string status; // the run's status, "not run" (pending) or "no run" (pkbw died before recording)
    std::optional<double> speedup;         // pkbw's pooled speedup (perf runs that passed cleanly)
    std::optional<double> ci_low, ci_high; // its stored 95% interval (absent in runs stored before it)
    std::optional<Verdict> verdict;        // its stored verdict
    std::optional<double> pkb_speedup;     // PKB's figure beside it, when stored
    bool faster = false;                   // verdict faster and not disputed by PKB
    bool disputed = false;                 // pkb_disagrees
};

// A generation's row: its PaperFigures over the pairs with a solution file (attempted), plus what
// the sweep adds.
struct SweepGenerationRow : PaperFigures {
    std::string label;
    int judged = 0;                      // pairs with a finished run
    std::map<std::string, int> verdicts; // verdict name -> count (timed pairs with a stored verdict)
    std::map<std::string, int>
        failures; // status -> count (mismatch, compile_error, invalid_timing, ..., "no run", "not run")
};

struct SweepTable {
    SweepRecord sweep;
    std::vector<SweepGenerationRow> generations;
    std::vector<SweepPairView> pairs;
    int done = 0, total = 0;
};

// Throws StoreError when the store has no such sweep.
SweepTable sweep_table(const Store& store, std::int64_t sweep_id);

// A failing pair's message in one line of at most `limit` bytes, for the lists of failing pairs (`pkbw
// show --sweep`, the Sweeps tab). A message that carries a Python traceback (a PKB solution that
// raised) keeps its first line and the exception's own ("TypeError: launch_barrier(): incompatible
// function arguments ..."), which the frames in between would push out of any short cell; others are
// their first bytes, whitespace runs folded.
std::string pair_message_headline(const std::string& message, std::size_t limit);

// The p of the printed table: 0, 1, 1.5, 2.
std::vector<double> default_fast_p();

} // namespace pkbw
