// KernelBench-style scores over many results, read from core's PaperFigures (pkbw/core/sweep_table.h)
// so that the Generations tab, the Sweeps tab and `pkbw show --sweep` count alike: fast_p (the share
// of problems whose candidate is correct and, by its verdict, faster than p times the reference) as a
// continuous curve, and the geometric-mean speedup over correct results with its n.
#pragma once

#include "pkbw/core/sweep_table.h"

#include <optional>
#include <vector>

namespace pkbw::app {

// One result: correct, its speedup, interval, verdict and PKB's figure (core's PairOutcome).
using ScoredResult = PairOutcome;

// Every result one attempted pair of the denominator.
PaperFigures paper_figures(const std::vector<ScoredResult>& results);
double fast_p(const std::vector<ScoredResult>& results, double p);
// The curve's steps (PaperFigures::fast_p_steps up to the largest bound), drawn left-continuous.
std::vector<std::pair<double, double>> fast_p_curve(const std::vector<ScoredResult>& results);
// Geometric mean of the speedups of correct, measured results; nullopt when there are none.
std::optional<double> geomean_speedup(const std::vector<ScoredResult>& results);

} // namespace pkbw::app
