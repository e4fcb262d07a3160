// The router's exactly-k selection (topk_select.h) on rows worked out by hand: the k largest in
// descending order, the lower index at a tie on the boundary, ties inside the selection, and which
// rows count as a boundary tie.
#include "pkbw/toolkit/topk_select.h"

#include <gtest/gtest.h>
#include <vector>

using namespace pkbw::tk;

namespace {

std::vector<int> select(const std::vector<float>& row, int k) {
    std::vector<int> out(static_cast<std::size_t>(k), -1);
    top_k_select(row.data(), static_cast<int>(row.size()), k, out.data());
    return out;
}

} // namespace

TEST(ToolkitTopKSelect, TheKLargestInDescendingOrder) {
    EXPECT_EQ(select({0.1f, 0.4f, 0.05f, 0.3f, 0.15f}, 2), (std::vector<int>{1, 3}));
    EXPECT_EQ(select({0.1f, 0.4f, 0.05f, 0.3f, 0.15f}, 3), (std::vector<int>{1, 3, 4}));
    EXPECT_EQ(select({5.f, 4.f, 3.f}, 3), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(select({1.f, 2.f, 3.f}, 1), (std::vector<int>{2}));
}

TEST(ToolkitTopKSelect, ABoundaryTieSelectsTheLowerIndex) {
    // 2nd, 3rd and 4th largest are equal: experts 1 and 3 and 6 tie for the second slot.
    const std::vector<float> row = {0.1f, 0.2f, 0.05f, 0.2f, 0.4f, 0.0f, 0.2f};
    EXPECT_EQ(select(row, 2), (std::vector<int>{4, 1}));
    EXPECT_EQ(select(row, 3), (std::vector<int>{4, 1, 3}));
    EXPECT_TRUE(top_k_boundary_tie(row.data(), 7, 2));
    EXPECT_TRUE(top_k_boundary_tie(row.data(), 7, 3));
    EXPECT_FALSE(top_k_boundary_tie(row.data(), 7, 4)); // all three tied values are in the top 4
}

TEST(ToolkitTopKSelect, ATieInsideTheSelectionIsNoBoundaryTie) {
    const std::vector<float> row = {0.3f, 0.1f, 0.3f, 0.2f};
    EXPECT_EQ(select(row, 2), (std::vector<int>{0, 2}));
    EXPECT_FALSE(top_k_boundary_tie(row.data(), 4, 2));
    EXPECT_TRUE(top_k_boundary_tie(row.data(), 4, 1));  // k = 1: experts 0 and 2 tie for the only slot
    EXPECT_FALSE(top_k_boundary_tie(row.data(), 4, 4)); // k = n: nothing is left out
    EXPECT_FALSE(top_k_boundary_tie(row.data(), 4, 0));
}

TEST(ToolkitTopKSelect, AllEqualSelectsTheFirstK) {
    const std::vector<double> row(8, 0.125);
    std::vector<int> out(2);
    top_k_select(row.data(), 8, 2, out.data());
    EXPECT_EQ(out, (std::vector<int>{0, 1}));
    EXPECT_TRUE(top_k_boundary_tie(row.data(), 8, 2));
}
