// The float64 top-k / top-p filter (topk_host.h) on rows small enough to work out by hand: ties at the
// top-k threshold, the tie rule at the top-p boundary, the always-kept largest element, both filters
// together and neither.
#include "pkbw/toolkit/topk_host.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>

using namespace pkbw::tk;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<unsigned char> keep_of(const std::vector<double>& filtered) {
    std::vector<unsigned char> keep;
    for (double v : filtered) {
        keep.push_back(v == -kInf ? 0 : 1);
    }
    return keep;
}

} // namespace

TEST(ToolkitTopK, TopKKeepsEveryTieAtTheThreshold) {
    std::vector<unsigned char> keep;
    const auto out = top_k_top_p_f64(pkbw::DType::F32, {2, 1.0}, {1, 3, 3, 2, 3}, 1, 5, &keep);
    EXPECT_EQ(out, (std::vector<double>{-kInf, 3, 3, -kInf, 3}));
    EXPECT_EQ(keep, (std::vector<unsigned char>{0, 1, 1, 0, 1}));
    // k larger than the row keeps everything.
    EXPECT_EQ(top_k_top_p_f64(pkbw::DType::F32, {9, 1.0}, {5, 1, 4}, 1, 3), (std::vector<double>{5, 1, 4}));
}

TEST(ToolkitTopK, TopPKeepsTheSmallestSetAboveTheBound) {
    // probabilities 0.1, 0.2, 0.7; prefixes 0.1, 0.3, 1.0.
    const std::vector<double> row = {0, std::log(2.0), std::log(7.0)};
    auto out = top_k_top_p_f64(pkbw::DType::F32, {0, 0.75}, row, 1, 3); // bound 0.25
    EXPECT_EQ(keep_of(out), (std::vector<unsigned char>{0, 1, 1}));
    out = top_k_top_p_f64(pkbw::DType::F32, {0, 0.95}, row, 1, 3); // bound 0.05: all prefixes above
    EXPECT_EQ(keep_of(out), (std::vector<unsigned char>{1, 1, 1}));
    out = top_k_top_p_f64(pkbw::DType::F32, {0, 0.05}, row, 1, 3); // bound 0.95: only the forced last
    EXPECT_EQ(keep_of(out), (std::vector<unsigned char>{0, 0, 1}));
    EXPECT_EQ(out[2], std::log(7.0));
}

TEST(ToolkitTopK, TiesAtTheTopPBoundaryKeepTheHigherIndex) {
    // Three equal values, probabilities 1/3 each, prefixes 1/3, 2/3, 1: with bound 0.5 one of the
    // three falls below it. Stable ascending order puts the lowest index first, so index 0 is dropped.
    std::vector<unsigned char> keep;
    top_k_top_p_f64(pkbw::DType::F32, {0, 0.5}, {1, 1, 1}, 1, 3, &keep);
    EXPECT_EQ(keep, (std::vector<unsigned char>{0, 1, 1}));
    // The same values among others, out of order: the dropped one is the lowest index of the tie.
    top_k_top_p_f64(pkbw::DType::F32, {0, 0.5}, {1, -30, 1, 1}, 1, 4, &keep);
    EXPECT_EQ(keep, (std::vector<unsigned char>{0, 0, 1, 1}));
}

TEST(ToolkitTopK, TopKThenTopPOverTheSurvivors) {
    // -5 is cut by top-k = 3; the softmax is then over the other three only (0.1, 0.2, 0.7).
    const std::vector<double> row = {std::log(7.0), -5, 0, std::log(2.0)};
    std::vector<unsigned char> keep;
    top_k_top_p_f64(pkbw::DType::F32, {3, 0.75}, row, 1, 4, &keep);
    EXPECT_EQ(keep, (std::vector<unsigned char>{1, 0, 0, 1}));
    // Two rows are filtered independently.
    const auto two = top_k_top_p_f64(pkbw::DType::F32, {1, 1.0}, {1, 2, 4, 3}, 2, 2);
    EXPECT_EQ(two, (std::vector<double>{-kInf, 2, 4, -kInf}));
}

TEST(ToolkitTopK, ProbabilitiesAreRoundedToTheDtype) {
    // Two bf16-exact logits whose smaller probability is 0.09993: below the bound float(1 - 0.9) = 0.1f
    // in f32, so dropped; rounded to bf16 it is 0.10009765625, above the bound, so kept.
    const std::vector<double> row = {168.0 / 32768, 2.203125};
    std::vector<unsigned char> keep;
    top_k_top_p_f64(pkbw::DType::F32, {0, 0.9}, row, 1, 2, &keep);
    EXPECT_EQ(keep, (std::vector<unsigned char>{0, 1}));
    top_k_top_p_f64(pkbw::DType::BF16, {0, 0.9}, row, 1, 2, &keep);
    EXPECT_EQ(keep, (std::vector<unsigned char>{1, 1}));
}

TEST(ToolkitTopK, NoFilterLeavesTheRow) {
    std::vector<unsigned char> keep;
    const std::vector<double> row = {3, -1, 2};
    EXPECT_EQ(top_k_top_p_f64(pkbw::DType::BF16, {0, 1.0}, row, 1, 3, &keep), row);
    EXPECT_EQ(keep, (std::vector<unsigned char>{1, 1, 1}));
}
