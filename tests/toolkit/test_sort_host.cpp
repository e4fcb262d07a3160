// The host twins of the CUB layer (toolkit sort_host.h): the rules the device side must match, checked
// against torch's documented results written out by hand.
#include "pkbw/toolkit/sort_host.h"

#include <gtest/gtest.h>

using namespace pkbw::tk;

TEST(SortHost, StableArgsortKeepsEqualKeysInInputOrder) {
    const int owner[] = {1, 0, 1, 2, 0, 1};
    EXPECT_EQ(stable_argsort_by_key(owner, 6), (std::vector<long long>{1, 4, 0, 2, 5, 3}));
}

TEST(SortHost, HistogramAndExclusiveScanGiveOffsets) {
    const int owner[] = {1, 0, 1, 2, 0, 1};
    std::vector<long long> counts;
    ASSERT_TRUE(histogram(owner, 6, 4, counts));
    EXPECT_EQ(counts, (std::vector<long long>{2, 3, 1, 0}));
    EXPECT_EQ(exclusive_scan(counts), (std::vector<long long>{0, 2, 5, 6}));
    const int bad[] = {0, 4};
    EXPECT_FALSE(histogram(bad, 2, 4, counts));
}

TEST(SortHost, SearchsortedLeftAndRight) {
    const float sorted[] = {1, 2, 2, 2, 5};
    EXPECT_EQ(searchsorted(sorted, 5, 2.0f), 1);
    EXPECT_EQ(searchsorted(sorted, 5, 2.0f, true), 4);
    EXPECT_EQ(searchsorted(sorted, 5, 0.0f), 0);
    EXPECT_EQ(searchsorted(sorted, 5, 9.0f, true), 5);
}

TEST(SortHost, UniqueKeepsFirstOccurrenceOrder) {
    const long long ids[] = {7, 3, 7, 9, 3, 1};
    std::vector<long long> inverse;
    EXPECT_EQ(unique_first(ids, 6, &inverse), (std::vector<long long>{7, 3, 9, 1}));
    EXPECT_EQ(inverse, (std::vector<long long>{0, 1, 0, 2, 1, 3}));
}

TEST(SortHost, SegmentedTopkBreaksTiesByLowerIndex) {
    const float values[] = {1, 3, 3, 0, /* row 1 */ 2, 2, 2, 5};
    EXPECT_EQ(segmented_topk(values, 2, 4, 2), (std::vector<long long>{1, 2, 3, 0}));
}

TEST(SortHost, GatherAndScatterAddRows) {
    const float src[] = {1, 2, 3, 4, 5, 6};
    float gathered[6] = {};
    gather_rows_host(src, 2 * sizeof(float), {2, 0, 2}, gathered);
    EXPECT_EQ(std::vector<float>(gathered, gathered + 6), (std::vector<float>{5, 6, 1, 2, 5, 6}));
    float dst[4] = {};
    scatter_add_rows_host(src, 2, {1, 0, 1}, dst);
    EXPECT_EQ(std::vector<float>(dst, dst + 4), (std::vector<float>{3, 4, 6, 8}));
}
