// KernelBench-style scores over many runs: fast_p (the fraction of problems whose candidate is
// correct and faster than p times the reference) as a continuous curve, and the geometric-mean
// speedup over correct results.
#pragma once

#include <optional>
#include <vector>

namespace pkbw::app {

struct ScoredResult {
    bool correct = false;
    std::optional<double> speedup; // reference time / candidate time; absent when not measured
    std::optional<double> ci_low;  // the low end of its stored 95% interval; absent in older runs
};

// fast_p at threshold p over all results: those that count toward it by core's rule
// (counts_toward_fast_p, pkbw/core/sweep_table.h, the Sweeps tab's and `pkbw show --sweep`'s): correct,
// and for p > 0 a speedup whose interval clears p (ci_low > p; speedup > p without a stored interval).
double fast_p(const std::vector<ScoredResult>& results, double p);
// The curve's steps: (p, fast_p) at p = 0 and at each distinct fast_bound (ci_low, or the speedup
// without an interval), ascending. fast_p is right-continuous and falls at each, so these points plus
// step drawing give the exact curve.
std::vector<std::pair<double, double>> fast_p_curve(const std::vector<ScoredResult>& results);
// Geometric mean of the speedups of correct, measured results; nullopt when there are none.
std::optional<double> geomean_speedup(const std::vector<ScoredResult>& results);

} // namespace pkbw::app
