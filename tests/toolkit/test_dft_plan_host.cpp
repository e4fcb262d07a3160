// Planned float64 DFTs (dft_plan_host.h, 60's input spectrum and oracle): the same values as dft_f64 and
// fft_axis_f64 (fft_axis_host.h) in both directions, for power-of-two lengths and Bluestein's, one plan
// reused over many lines.
#include "pkbw/toolkit/dft_plan_host.h"
#include "pkbw/toolkit/fft_axis_host.h"

#include <cmath>
#include <complex>
#include <gtest/gtest.h>
#include <vector>

using namespace pkbw::tk;
using cd = std::complex<double>;

namespace {

std::vector<cd> values(std::size_t n, double phase) {
    std::vector<cd> x(n);
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = {std::sin(1.3 * static_cast<double>(i) + phase),
                std::cos(0.7 * static_cast<double>(i * i) - phase)};
    }
    return x;
}

// Largest difference relative to the largest magnitude of b (the transforms' own scale).
double relative_difference(const std::vector<cd>& a, const std::vector<cd>& b) {
    double worst = 0, largest = 1e-300;
    for (std::size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, std::abs(a[i] - b[i]));
        largest = std::max(largest, std::abs(b[i]));
    }
    return worst / largest;
}

} // namespace

TEST(ToolkitDftPlan, MatchesDftF64ForEveryLengthAndDirection) {
    for (std::size_t n : {1u, 2u, 3u, 5u, 16u, 45u, 97u, 160u, 720u, 1024u, 1440u}) {
        DftPlanF64 plan(n);
        EXPECT_EQ(plan.size(), n);
        for (bool inverse : {false, true}) {
            for (double phase : {0.0, 0.4}) { // the same plan twice: its scratch line is reused
                std::vector<cd> planned = values(n, phase), direct = planned;
                plan.transform(planned.data(), inverse);
                dft_f64(direct, inverse);
                EXPECT_LT(relative_difference(planned, direct), 1e-14)
                    << "n = " << n << " inverse " << inverse;
            }
        }
    }
}

TEST(ToolkitDftPlan, RoundTripIsTheIdentityTimesN) {
    const std::size_t n = 720; // Bluestein over m = 2048
    DftPlanF64 plan(n);
    const std::vector<cd> x = values(n, 1.1);
    std::vector<cd> y = x;
    plan.transform(y.data(), false);
    plan.transform(y.data(), true);
    for (cd& v : y) {
        v /= static_cast<double>(n);
    }
    EXPECT_LT(relative_difference(y, x), 1e-13);
}

TEST(ToolkitDftPlan, AxisTransformMatchesFftAxisF64) {
    const FftAxis axis{3, 80, 7}; // 80 = 16 · 5: Bluestein, lines interleaved with stride 7
    for (bool inverse : {false, true}) {
        std::vector<cd> planned = values(static_cast<std::size_t>(axis.count()), 0.2), direct = planned;
        const double scale = fft_scale(FftNorm::ortho, axis.n, inverse);
        planned_fft_axis_f64(planned, axis, inverse, scale);
        fft_axis_f64(direct, axis, inverse, scale);
        EXPECT_LT(relative_difference(planned, direct), 1e-14) << "inverse " << inverse;
    }
    std::vector<cd> wrong(5);
    EXPECT_THROW(planned_fft_axis_f64(wrong, axis, false, 1.0), std::invalid_argument);
}
