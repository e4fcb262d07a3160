#include "scoring.h"

#include "pkbw/core/sweep_table.h"

#include <algorithm>
#include <cmath>

namespace pkbw::app {

double fast_p(const std::vector<ScoredResult>& results, double p) {
    if (results.empty()) {
        return 0;
    }
    std::size_t hits = 0;
    for (const auto& r : results) {
        hits += counts_toward_fast_p(r.correct, r.speedup, r.ci_low, p) ? 1 : 0;
    }
    return static_cast<double>(hits) / static_cast<double>(results.size());
}

std::vector<std::pair<double, double>> fast_p_curve(const std::vector<ScoredResult>& results) {
    std::vector<double> bounds;
    for (const auto& r : results) {
        if (r.correct && r.speedup) {
            const double bound = fast_bound(*r.speedup, r.ci_low);
            if (std::isfinite(bound) && bound > 0) {
                bounds.push_back(bound);
            }
        }
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    std::vector<std::pair<double, double>> curve;
    curve.emplace_back(0.0, fast_p(results, 0.0));
    for (double b : bounds) {
        curve.emplace_back(b, fast_p(results, b));
    }
    return curve;
}

std::optional<double> geomean_speedup(const std::vector<ScoredResult>& results) {
    double log_sum = 0;
    int count = 0;
    for (const auto& r : results) {
        if (r.correct && r.speedup && *r.speedup > 0 && std::isfinite(*r.speedup)) {
            log_sum += std::log(*r.speedup);
            ++count;
        }
    }
    if (count == 0) {
        return std::nullopt;
    }
    return std::exp(log_sum / count);
}

} // namespace pkbw::app
