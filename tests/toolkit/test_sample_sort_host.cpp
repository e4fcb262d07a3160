// Sample sort's host plan (toolkit sample_sort.h, PKB 85) and the mask suppression rule
// (mask_suppression.h, PKB 81). The plan is checked end to end: W ranks' shards go through PKB's steps
// (regular samples, splitters, bucket bounds, the bucket exchange, the merge, the exact rebalance) on
// the host, with many equal values and empty ranks, and every rank's slice must be the global sort's.
// PKB's own inputs never suppress a mask (IoU of about 0.5 against the 0.7 threshold), so the
// suppression rule is checked here on masks built to overlap.
#include "pkbw/toolkit/mask_suppression.h"
#include "pkbw/toolkit/sample_sort.h"
#include "pkbw/toolkit/sort_host.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace pkbw::tk;

TEST(SampleSortHost, BalancedRangeGivesTheFirstRanksTheRemainder) {
    EXPECT_EQ(balanced_range(0, 4, 10).begin, 0);
    EXPECT_EQ(balanced_range(0, 4, 10).end, 3);
    EXPECT_EQ(balanced_range(1, 4, 10).end, 6);
    EXPECT_EQ(balanced_range(2, 4, 10).begin, 6);
    EXPECT_EQ(balanced_range(3, 4, 10).size(), 2);
    EXPECT_EQ(balanced_range(3, 4, 2).size(), 0);
}

TEST(SampleSortHost, RegularSamplePositionsFollowPkb) {
    EXPECT_EQ(regular_sample_positions(10, 4), (std::vector<long long>{1, 4, 6, 9})); // (i + 1) * 10 / 4 - 1
    EXPECT_EQ(regular_sample_positions(3, 4), (std::vector<long long>{0, 1, 2}));     // fewer elements
    EXPECT_TRUE(regular_sample_positions(0, 4).empty());
}

TEST(SampleSortHost, SplittersSkipEmptySlotsAndOrderByValueRankPosition) {
    const std::vector<SortSample> gathered = {{5, 0, 3}, {2, 0, 1}, {0, -1, -1},
                                              {2, 1, 0}, {7, 1, 4}, {2, 0, 0}};
    const auto splitters = choose_splitters(gathered, 2); // usable 5: index 5 / 2 - 1 = 1
    ASSERT_EQ(splitters.size(), 1u);
    EXPECT_EQ(splitters[0].value, 2);
    EXPECT_EQ(splitters[0].rank, 0);
    EXPECT_EQ(splitters[0].position, 1);
}

namespace {

// PKB's distributed_sample_sort on the host for W simulated ranks; returns each rank's output.
std::vector<std::vector<double>> sample_sort(const std::vector<std::vector<double>>& shards) {
    const long long world = static_cast<long long>(shards.size());
    std::vector<std::vector<double>> sorted = shards;
    std::vector<long long> active, sort_rank(static_cast<std::size_t>(world), -1);
    for (long long r = 0; r < world; ++r) {
        std::sort(sorted[r].begin(), sorted[r].end());
        if (!sorted[r].empty()) {
            sort_rank[r] = static_cast<long long>(active.size());
            active.push_back(r);
        }
    }
    const auto count = static_cast<long long>(active.size());
    std::vector<SortSample> gathered;
    for (long long r = 0; r < world; ++r) {
        const auto n = static_cast<long long>(sorted[r].size());
        std::vector<SortSample> slots(static_cast<std::size_t>(count));
        const auto positions =
            sort_rank[r] >= 0 ? regular_sample_positions(n, count) : std::vector<long long>{};
        for (std::size_t i = 0; i < positions.size(); ++i) {
            slots[i] = {sorted[r][positions[i]], sort_rank[r], positions[i]};
        }
        gathered.insert(gathered.end(), slots.begin(), slots.end());
    }
    const auto splitters = choose_splitters(gathered, count);
    std::vector<std::vector<double>> buckets(static_cast<std::size_t>(world));
    for (long long r = 0; r < world; ++r) {
        const auto n = static_cast<long long>(sorted[r].size());
        std::vector<long long> left, right;
        for (const SortSample& s : splitters) {
            left.push_back(searchsorted(sorted[r].data(), n, s.value, false));
            right.push_back(searchsorted(sorted[r].data(), n, s.value, true));
        }
        const auto bounds = split_boundaries(splitters, sort_rank[r], n, left, right);
        for (std::size_t b = 0; b < active.size(); ++b) {
            auto& to = buckets[active[b]];
            to.insert(to.end(), sorted[r].begin() + bounds[b], sorted[r].begin() + bounds[b + 1]);
        }
    }
    long long total = 0;
    for (auto& bucket : buckets) {
        std::sort(bucket.begin(), bucket.end());
        total += static_cast<long long>(bucket.size());
    }
    std::vector<std::vector<double>> out(static_cast<std::size_t>(world));
    long long start = 0;
    for (long long r = 0; r < world; ++r) {
        const auto counts = rebalance_counts(start, static_cast<long long>(buckets[r].size()), world, total);
        long long at = 0;
        for (long long dest = 0; dest < world; ++dest) {
            out[dest].insert(out[dest].end(), buckets[r].begin() + at,
                             buckets[r].begin() + at + counts[dest]);
            at += counts[dest];
        }
        start += static_cast<long long>(buckets[r].size());
    }
    return out;
}

void expect_global_slices(const std::vector<std::vector<double>>& shards) {
    std::vector<double> all;
    for (const auto& shard : shards) {
        all.insert(all.end(), shard.begin(), shard.end());
    }
    std::sort(all.begin(), all.end());
    const auto out = sample_sort(shards);
    const auto world = static_cast<long long>(shards.size());
    for (long long r = 0; r < world; ++r) {
        const IndexRange slice = balanced_range(r, world, static_cast<long long>(all.size()));
        EXPECT_EQ(out[r], std::vector<double>(all.begin() + slice.begin, all.begin() + slice.end))
            << "rank " << r;
    }
}

} // namespace

TEST(SampleSortHost, EveryRankGetsItsSliceOfTheGlobalSort) {
    std::mt19937 rng(85);
    for (int world : {1, 2, 3, 4, 8}) {
        for (int trial = 0; trial < 4; ++trial) {
            std::vector<std::vector<double>> shards(static_cast<std::size_t>(world));
            for (int r = 0; r < world; ++r) {
                // PKB 85's draws (randint(-50, 50) - r * n) with odd ranks empty on trial 3, and heavy ties.
                const int n = trial == 3 && r % 2 == 1 ? 0 : 4 * world + 3 * r;
                for (int i = 0; i < n; ++i) {
                    const double v = static_cast<double>(static_cast<int>(rng() % 100) - 50);
                    shards[r].push_back(trial == 2 ? std::floor(v / 25) : v - r * n);
                }
            }
            expect_global_slices(shards);
        }
    }
    expect_global_slices({{3, 3, 3, 3}, {3, 3}, {}, {3}}); // one value everywhere
}

TEST(MaskSuppression, IouIsIntersectionOverClampedUnion) {
    EXPECT_FLOAT_EQ(mask_iou(7, 10, 7), 0.7f); // 7 / (10 + 7 - 7)
    EXPECT_EQ(mask_iou(0, 0, 0), 0.0f);        // union clamped at 1
    EXPECT_TRUE(mask_iou(7, 10, 7) >= 0.7f);   // 7/10 rounds to 0.7f, as torch compares in fp32
}

TEST(MaskSuppression, LaterOccludedObjectOfAnOverlappingPairIsSuppressed) {
    // Objects 0 and 1 overlap (IoU 9/11), 2 overlaps nothing; 3 overlaps 0 (IoU 0.9) but its frame is -1.
    const float inter[] = {10, 9, 0, 9, /**/ 9, 10, 0, 9, /**/ 0, 0, 5, 0, /**/ 9, 9, 0, 9};
    const long long last[] = {2, 1, 3, -1};
    EXPECT_TRUE(overlap_suppressed(0, 4, inter, last, 0.7f, false)); // 2 > 1, and 1 > -1
    EXPECT_FALSE(
        overlap_suppressed(1, 4, inter, last, 0.7f, false)); // 1 < 2; against 3: 1 > -1, but 3's is -1
    EXPECT_FALSE(overlap_suppressed(2, 4, inter, last, 0.7f, false));
    EXPECT_FALSE(overlap_suppressed(3, 4, inter, last, 0.7f, false)); // -1 is later than nobody
    // reverse: the earlier frame is suppressed instead
    EXPECT_FALSE(overlap_suppressed(0, 4, inter, last, 0.7f, true));
    EXPECT_TRUE(overlap_suppressed(1, 4, inter, last, 0.7f, true));
    EXPECT_FALSE(overlap_suppressed(0, 4, inter, last, 0.95f, false)); // below a higher threshold
}
