// Host side of the axis FFTs (fft_axis_host.h, 59 and 60's oracles): dft_f64 of power-of-two and other
// lengths against the defining sum, transforms along the middle axis of a 3-D array, torch's scale
// factors.
#include "pkbw/toolkit/fft_axis_host.h"

#include <cmath>
#include <complex>
#include <gtest/gtest.h>
#include <numbers>
#include <vector>

using namespace pkbw::tk;
using cd = std::complex<double>;

namespace {

std::vector<cd> naive_dft(const std::vector<cd>& x, bool inverse) {
    const std::size_t n = x.size();
    std::vector<cd> out(n);
    for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t j = 0; j < n; ++j) {
            const double angle =
                2 * std::numbers::pi * static_cast<double>(j * k % n) / static_cast<double>(n);
            out[k] += x[j] * std::polar(1.0, inverse ? angle : -angle);
        }
    }
    return out;
}

std::vector<cd> sample_values(std::size_t n, double phase) {
    std::vector<cd> x(n);
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = {std::sin(1.7 * static_cast<double>(i) + phase),
                std::cos(0.3 * static_cast<double>(i * i) - phase)};
    }
    return x;
}

double max_difference(const std::vector<cd>& a, const std::vector<cd>& b) {
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, std::abs(a[i] - b[i]));
    }
    return worst;
}

} // namespace

TEST(ToolkitFftAxis, AnyLengthMatchesTheDefiningSum) {
    for (std::size_t n : {1, 2, 3, 6, 12, 17, 64, 100, 129}) {
        for (bool inverse : {false, true}) {
            const std::vector<cd> x = sample_values(n, inverse ? 0.5 : 0.0);
            std::vector<cd> fast = x;
            dft_f64(fast, inverse);
            EXPECT_LT(max_difference(fast, naive_dft(x, inverse)), 1e-11 * static_cast<double>(n))
                << "n = " << n << (inverse ? " inverse" : " forward");
        }
    }
}

TEST(ToolkitFftAxis, InverseUndoesForwardUpToN) {
    const std::vector<cd> x = sample_values(90, 1.0);
    std::vector<cd> y = x;
    dft_f64(y, false);
    dft_f64(y, true);
    for (cd& v : y) {
        v /= 90.0;
    }
    EXPECT_LT(max_difference(x, y), 1e-12);
}

TEST(ToolkitFftAxis, TransformsTheMiddleAxisOfEveryLine) {
    const FftAxis axis{2, 5, 3}; // [2, 5, 3]: 6 lines of 5, interleaved by 3
    const std::vector<cd> x = sample_values(static_cast<std::size_t>(axis.count()), 0.2);
    std::vector<cd> y = x;
    fft_axis_f64(y, axis, false, 0.5);
    for (long long o = 0; o < axis.outer; ++o) {
        for (long long i = 0; i < axis.inner; ++i) {
            std::vector<cd> line(5);
            for (long long k = 0; k < 5; ++k) {
                line[static_cast<std::size_t>(k)] = x[static_cast<std::size_t>((o * 5 + k) * 3 + i)];
            }
            const std::vector<cd> expected = naive_dft(line, false);
            for (long long k = 0; k < 5; ++k) {
                EXPECT_LT(std::abs(y[static_cast<std::size_t>((o * 5 + k) * 3 + i)] -
                                   0.5 * expected[static_cast<std::size_t>(k)]),
                          1e-12);
            }
        }
    }
    std::vector<cd> short_data(7);
    EXPECT_THROW(fft_axis_f64(short_data, axis, false, 1.0), std::invalid_argument);
}

TEST(ToolkitFftAxis, ScalesAsTorchNorms) {
    EXPECT_EQ(fft_scale(FftNorm::backward, 16, false), 1.0);
    EXPECT_EQ(fft_scale(FftNorm::backward, 16, true), 1.0 / 16);
    EXPECT_EQ(fft_scale(FftNorm::forward, 16, false), 1.0 / 16);
    EXPECT_EQ(fft_scale(FftNorm::forward, 16, true), 1.0);
    EXPECT_EQ(fft_scale(FftNorm::ortho, 16, false), 0.25);
    EXPECT_EQ(fft_scale(FftNorm::ortho, 16, true), 0.25);
    EXPECT_EQ(fft_scale(FftNorm::ortho, 3, true), 1.0 / std::sqrt(3.0));
}

TEST(ToolkitFftAxis, InterleavesRealThenImaginary) {
    const std::vector<cd> x = {{1, 2}, {-3, 0.5}};
    EXPECT_EQ(interleaved(x), (std::vector<double>{1, 2, -3, 0.5}));
    EXPECT_EQ(from_interleaved(interleaved(x)), x);
    EXPECT_EQ(round_to_complex64({0.1, 1.0 / 3}), cd(static_cast<float>(0.1), static_cast<float>(1.0 / 3)));
}
