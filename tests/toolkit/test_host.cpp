#include "pkbw/toolkit/host.h"

#include <gtest/gtest.h>

using namespace pkbw::tk;

TEST(ToolkitHost, GemmTransposesAndBias) {
    // A [2, 3], B [3, 2]; the transposed storages hold the same matrices.
    const std::vector<double> a = {1, 2, 3, 4, 5, 6}, at = {1, 4, 2, 5, 3, 6};
    const std::vector<double> b = {1, 0, 0, 1, 1, 1}, bt = {1, 0, 1, 0, 1, 1};
    const std::vector<double> expected = {4, 5, 10, 11};
    EXPECT_EQ(gemm_f64(a, b, 2, 2, 3), expected);
    EXPECT_EQ(gemm_f64(at, b, 2, 2, 3, true, false), expected);
    EXPECT_EQ(gemm_f64(a, bt, 2, 2, 3, false, true), expected);
    EXPECT_EQ(gemm_f64(at, bt, 2, 2, 3, true, true), expected);
    EXPECT_EQ(gemm_f64(a, b, 2, 2, 3, false, false, {0.5, -1}), (std::vector<double>{4.5, 4, 10.5, 10}));
}

TEST(ToolkitHost, RoundToFollowsTheDtype) {
    EXPECT_EQ(round_to(pkbw::DType::BF16, 1.0 + 1.0 / 256), 1.0); // a tie to even
    EXPECT_EQ(round_to(pkbw::DType::BF16, 1.0 + 3.0 / 256), 1.0 + 4.0 / 256);
    EXPECT_EQ(round_to(pkbw::DType::F32, 0.1), static_cast<double>(0.1f));
    EXPECT_EQ(gemm_rounded({1.0 / 3}, {1.0}, 1, 1, 1, pkbw::DType::F16)[0],
              round_to(pkbw::DType::F16, 1.0 / 3));
}

TEST(ToolkitHost, Reductions) {
    const std::vector<double> x = {1, -2, 3, 0.5, 0.25, -4};
    EXPECT_EQ(row_sums_f64(x, 2, 3), (std::vector<double>{2, -3.25}));
    EXPECT_EQ(row_sum_squares_f64(x, 2, 3), (std::vector<double>{14, 16.3125}));
    EXPECT_EQ(row_max_f64(x, 2, 3), (std::vector<double>{3, 0.5}));
    EXPECT_EQ(row_absmax_f64(x, 2, 3), (std::vector<double>{3, 4}));
    EXPECT_EQ(block_absmax_f64(x, 2), (std::vector<double>{2, 3, 4}));
    EXPECT_EQ(column_sums_f64(x, 2, 3), (std::vector<double>{1.5, -1.75, -1}));
    EXPECT_EQ(sum_of_squares_f64(x), 30.3125);
    const std::vector<double> lse = row_logsumexp_f64(x, 2, 3);
    EXPECT_NEAR(lse[0], std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(3.0)), 1e-15);
    // Large values do not overflow: the max is subtracted first.
    EXPECT_NEAR(row_logsumexp_f64({1000, 1000}, 1, 2)[0], 1000 + std::log(2.0), 1e-12);
    EXPECT_EQ(row_logsumexp_f64({-INFINITY, -INFINITY}, 1, 2)[0], -INFINITY);
}
