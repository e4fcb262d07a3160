#include "scoring.h"

#include <algorithm>

namespace pkbw::app {

PaperFigures paper_figures(const std::vector<ScoredResult>& results) {
    PaperFigures figures;
    for (const auto& r : results) {
        figures.add(r);
    }
    return figures;
}

double fast_p(const std::vector<ScoredResult>& results, double p) {
    return paper_figures(results).fast_p(p);
}

std::vector<std::pair<double, double>> fast_p_curve(const std::vector<ScoredResult>& results) {
    const PaperFigures figures = paper_figures(results);
    auto steps = figures.fast_p_steps(0);
    if (!steps.empty()) {
        steps.pop_back(); // the closing zero at p_end: the caller ends the curve where its axis ends
    }
    return steps;
}

std::optional<double> geomean_speedup(const std::vector<ScoredResult>& results) {
    return paper_figures(results).geomean();
}

} // namespace pkbw::app
