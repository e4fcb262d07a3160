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
};

// fast_p at threshold p: results counted correct with speedup > p, over all results.
double fast_p(const std::vector<ScoredResult>& results, double p);
// The curve's steps: (p, fast_p) at p = 0 and at each distinct speedup, ascending. fast_p is right-
// continuous and falls at each speedup, so these points plus step drawing give the exact curve.
std::vector<std::pair<double, double>> fast_p_curve(const std::vector<ScoredResult>& results);
// Geometric mean of the speedups of correct, measured results; nullopt when there are none.
std::optional<double> geomean_speedup(const std::vector<ScoredResult>& results);

} // namespace pkbw::app
