// Problem 60 (physicsnemo_distributed_irfft): the reduced shape rule (PKB's 720 x 1440 at M = N = 1024),
// its refusals, and the input: the rfft2 spectrum of one real field, split along H. The spectrum is
// checked by inverting it here with a direct DFT, independent of the descriptor's FFT.
#include "test_util.h"

#include <cmath>
#include <complex>
#include <numbers>

namespace pkbw::test {
namespace {

using cd = std::complex<double>;

// The whole half spectrum [F, H, K] of a configuration, from every rank's rows.
std::vector<cd> half_spectrum(const Problem& p, const ProblemConfig& c) {
    std::vector<std::vector<Tensor>> ranks;
    for (int r = 0; r < c.world_size; ++r) {
        ranks.push_back(p.build_inputs(c, r));
    }
    const Shape& s = ranks[0][0].shape();
    const std::int64_t fields = s[0] * s[1], rows = s[2], bins = s[3], height = rows * c.world_size;
    std::vector<cd> all(static_cast<std::size_t>(fields * height * bins));
    for (int r = 0; r < c.world_size; ++r) {
        const float* parts = ranks[r][0].data_as<float>();
        for (std::int64_t f = 0; f < fields; ++f)
            for (std::int64_t h = 0; h < rows; ++h)
                for (std::int64_t k = 0; k < bins; ++k) {
                    const std::int64_t from = (f * rows + h) * bins + k;
                    all[static_cast<std::size_t>((f * height + r * rows + h) * bins + k)] = {
                        parts[2 * from], parts[2 * from + 1]};
                }
    }
    return all;
}

// The field [F, H, Wd] of a half spectrum [F, H, Wd/2 + 1] by the direct inverse DFT (ortho) of its
// Hermitian extension; the imaginary parts' largest magnitude goes to max_imag.
std::vector<double> inverse_rfft2(const std::vector<cd>& half, std::int64_t fields, std::int64_t height,
                                  std::int64_t width, double& max_imag) {
    const std::int64_t bins = width / 2 + 1;
    const auto spectrum = [&](std::int64_t f, std::int64_t h, std::int64_t k) {
        return k < bins ? half[static_cast<std::size_t>((f * height + h) * bins + k)]
                        : std::conj(half[static_cast<std::size_t>(
                              (f * height + (height - h) % height) * bins + width - k)]);
    };
    const auto unit = [](std::int64_t num, std::int64_t n) {
        return std::polar(1.0, 2 * std::numbers::pi * static_cast<double>(num % n) / static_cast<double>(n));
    };
    std::vector<cd> rows(static_cast<std::size_t>(fields * height * width));
    for (std::int64_t f = 0; f < fields; ++f)
        for (std::int64_t h = 0; h < height; ++h)
            for (std::int64_t w = 0; w < width; ++w) {
                cd sum = 0;
                for (std::int64_t k = 0; k < width; ++k)
                    sum += spectrum(f, h, k) * unit(k * w, width);
                rows[static_cast<std::size_t>((f * height + h) * width + w)] = sum;
            }
    std::vector<double> field(rows.size());
    max_imag = 0;
    const double scale = 1.0 / std::sqrt(static_cast<double>(height * width));
    for (std::int64_t f = 0; f < fields; ++f)
        for (std::int64_t y = 0; y < height; ++y)
            for (std::int64_t w = 0; w < width; ++w) {
                cd sum = 0;
                for (std::int64_t h = 0; h < height; ++h)
                    sum += rows[static_cast<std::size_t>((f * height + h) * width + w)] * unit(h * y, height);
                sum *= scale;
                field[static_cast<std::size_t>((f * height + y) * width + w)] = sum.real();
                max_imag = std::max(max_imag, std::abs(sum.imag()));
            }
    return field;
}

TEST(PhysicsNemoIrfft60, PkbShapeAtTheDefaultAndReducedBelow) {
    const Problem& p = problem("60");
    const ProblemConfig pkb = config(2, 1024, 1024, DType::F32);
    EXPECT_EQ(p.check_config(pkb), std::nullopt);
    const auto in = p.input_specs(pkb, 1);
    ASSERT_EQ(in.size(), 1u);
    EXPECT_EQ(in[0].dtype, DType::C64);
    EXPECT_EQ(in[0].shape, (Shape{2, 10, 360, 721}));
    const auto out = p.output_specs(pkb, 1);
    EXPECT_EQ(out.at(0).dtype, DType::F32);
    EXPECT_EQ(out.at(0).shape, (Shape{2, 10, 720, 720}));
    const auto params = p.params(pkb);
    EXPECT_EQ(params.at("s[0]"), 720);
    EXPECT_EQ(params.at("s[1]"), 1440);
    EXPECT_EQ(params.at("dim[0]"), -2);
    EXPECT_EQ(params.at("dim[1]"), -1);
    // The test shapes: 64 x 128 is H = 32, Wd = 160; 160 x 160 is H = 112, Wd = 224.
    EXPECT_EQ(p.input_specs(config(8, 64, 128, DType::F32), 0).at(0).shape, (Shape{2, 10, 4, 81}));
    EXPECT_EQ(p.output_specs(config(8, 64, 128, DType::F32), 0).at(0).shape, (Shape{2, 10, 32, 20}));
    EXPECT_EQ(p.input_specs(config(4, 160, 160, DType::F32), 0).at(0).shape, (Shape{2, 10, 28, 113}));
    EXPECT_EQ(p.output_specs(config(4, 160, 160, DType::F32), 0).at(0).shape, (Shape{2, 10, 112, 56}));
}

TEST(PhysicsNemoIrfft60, RefusesWorldSizesThatDoNotDivideHOrWd) {
    const Problem& p = problem("60");
    const auto refused = p.check_config(config(7, 1024, 1024, DType::F32)); // PKB's assert 720 % W
    ASSERT_TRUE(refused.has_value());
    EXPECT_NE(refused->find("must divide H"), std::string::npos) << *refused;
    EXPECT_NE(refused->find("720"), std::string::npos) << *refused;
    EXPECT_EQ(p.check_config(config(6, 1024, 1024, DType::F32)), std::nullopt);
    EXPECT_TRUE(p.check_config(config(3, 64, 128, DType::F32)).has_value()); // H = 32
    // 128 x 64 is H = 80, Wd = 64: W = 5 divides H, not Wd (the all-to-all's width chunks).
    const auto width_refused = p.check_config(config(5, 128, 64, DType::F32));
    ASSERT_TRUE(width_refused.has_value());
    EXPECT_NE(width_refused->find("must divide Wd"), std::string::npos) << *width_refused;
    EXPECT_EQ(p.check_config(config(16, 64, 128, DType::F32)), std::nullopt);
}

TEST(PhysicsNemoIrfft60, ExactInputsAreTheSpectrumOfQuarterIntegers) {
    const Problem& p = problem("60");
    const ProblemConfig c = config(2, 64, 128, DType::F32, InputMode::Exact); // H = 32, Wd = 160
    const std::vector<cd> half = half_spectrum(p, c);
    double max_imag = 0;
    const std::vector<double> field = inverse_rfft2(half, 20, 32, 160, max_imag);
    EXPECT_LT(max_imag, 1e-5);
    double worst = 0, largest = 0;
    for (double v : field) {
        worst = std::max(worst, std::abs(4 * v - std::round(4 * v)));
        largest = std::max(largest, std::abs(v));
    }
    EXPECT_LT(worst, 4e-5); // every value k/4 up to the spectrum's complex64 rounding
    EXPECT_LE(largest, 2.0 + 1e-5);
    EXPECT_GE(largest, 1.75);
}

TEST(PhysicsNemoIrfft60, OneStandardNormalFieldSplitAlongH) {
    const Problem& p = problem("60");
    const std::vector<cd> half = half_spectrum(p, config(2, 64, 128, DType::F32));
    // W = 4 holds the same spectrum, rows split four ways.
    EXPECT_EQ(half, half_spectrum(p, config(4, 64, 128, DType::F32)));
    double max_imag = 0;
    const std::vector<double> field = inverse_rfft2(half, 20, 32, 160, max_imag);
    EXPECT_LT(max_imag, 1e-5);
    double sum = 0, squares = 0;
    for (double v : field) {
        sum += v;
        squares += v * v;
    }
    const double n = static_cast<double>(field.size()), mean = sum / n;
    EXPECT_NEAR(mean, 0.0, 0.02);
    EXPECT_NEAR(squares / n - mean * mean, 1.0, 0.03); // 102,400 values
    // Another trial is another field.
    ProblemConfig next = config(2, 64, 128, DType::F32);
    next.trial = 1;
    EXPECT_NE(half, half_spectrum(p, next));
}

} // namespace
} // namespace pkbw::test
