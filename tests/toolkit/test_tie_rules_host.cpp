// The tie rules of problems 69 and 79 on the host: positive_rank_host.h (the positive first among equal
// rounded sigmoids) and labelled_topk_host.h (the lower column first; the per-rank top-k then the owner's
// merge equal one top-k by the lower global index, the claim 79's reference and oracle rest on).
#include "pkbw/toolkit/labelled_topk_host.h"
#include "pkbw/toolkit/positive_rank_host.h"

#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace pkbw::tk {
namespace {

TEST(PositiveRank, CountsOnlyTheNegativesStrictlyAbove) {
    const std::vector<double> negatives{3, 2, 1, 2};
    EXPECT_EQ(positive_rank(2.0, negatives.data(), 4), 2);
    EXPECT_EQ(positive_ties(2.0, negatives.data(), 4), 2);
    EXPECT_EQ(positive_rank(0.5, negatives.data(), 4), 5);
    EXPECT_EQ(positive_ties(0.5, negatives.data(), 4), 0);
}

// sigmoid(0) = 0.5 and sigmoid(0.001) = 0.50025 are one value in bf16 (its ulp at 0.5 is 2^-8) and two in
// f32: the rounding to the dtype decides the rank and the tie.
TEST(PositiveRank, RoundsTheSigmoidToTheDtypeBeforeComparing) {
    const std::vector<double> pos{0.0}, neg{0.001, -3.0};
    const PositiveRanks f32 = positive_ranks_f64(DType::F32, pos, neg, 2);
    EXPECT_EQ(f32.ranks, (std::vector<long long>{2}));
    EXPECT_EQ(f32.ties, (std::vector<long long>{0}));
    const PositiveRanks bf16 = positive_ranks_f64(DType::BF16, pos, neg, 2);
    EXPECT_EQ(bf16.ranks, (std::vector<long long>{1}));
    EXPECT_EQ(bf16.ties, (std::vector<long long>{1}));
}

TEST(LabelledTopk, KeepsTheLowerColumnFirstAmongEqualValues) {
    const LabelledTopk shared = labelled_topk_f64({1, 3, 3, 2}, {10, 11, 12, 13}, 1, 4, 3);
    EXPECT_EQ(shared.values, (std::vector<double>{3, 3, 2}));
    EXPECT_EQ(shared.labels, (std::vector<long long>{11, 12, 13}));
    // Labels per row: [2, 2] values with their own labels.
    const LabelledTopk per_row = labelled_topk_f64({5, 5, 0, 7}, {1, 2, 3, 4}, 2, 2, 1);
    EXPECT_EQ(per_row.values, (std::vector<double>{5, 7}));
    EXPECT_EQ(per_row.labels, (std::vector<long long>{1, 4}));
}

TEST(LabelledTopk, TieRowsNeedEqualNeighboursWithDifferentLabelsAmongTheFirstKPlusOne) {
    const std::vector<double> values{3, 3, 1, /**/ 3, 3, 1, /**/ 1, 2, 3, /**/ 5, 4, 4};
    const std::vector<long long> labels{1, 2, 3, /**/ 5, 5, 6, /**/ 7, 8, 9, /**/ 1, 2, 3};
    EXPECT_EQ(labelled_tie_rows(values, labels, 4, 3, 1), (std::vector<long long>{0}));
    EXPECT_EQ(labelled_tie_rows(values, labels, 4, 3, 2), (std::vector<long long>{0, 3}));
}

// Per rank the top-k of its block of columns, the W candidate lists concatenated in rank order, the top-k
// of those: the same values and labels as one top-k over all columns, on values with many ties.
TEST(LabelledTopk, PerRankTopkThenMergeEqualsOneTopkByGlobalIndex) {
    std::mt19937 gen(7);
    std::uniform_int_distribution<int> small(0, 5);
    for (int world : {1, 2, 3, 5}) {
        const long long rows = 4, per_rank = 9, k = 4, width = per_rank * world;
        std::vector<double> all(static_cast<std::size_t>(rows * width));
        std::vector<long long> labels(static_cast<std::size_t>(width));
        for (auto& v : all) {
            v = small(gen);
        }
        for (long long j = 0; j < width; ++j) {
            labels[static_cast<std::size_t>(j)] = j;
        }
        std::vector<double> merged_values;
        std::vector<long long> merged_labels;
        std::vector<LabelledTopk> local;
        for (int r = 0; r < world; ++r) {
            std::vector<double> block;
            for (long long q = 0; q < rows; ++q) {
                block.insert(block.end(), all.begin() + q * width + r * per_rank,
                             all.begin() + q * width + (r + 1) * per_rank);
            }
            local.push_back(labelled_topk_f64(
                block,
                std::vector<long long>(labels.begin() + r * per_rank, labels.begin() + (r + 1) * per_rank),
                rows, per_rank, k));
        }
        for (long long q = 0; q < rows; ++q) {
            for (const LabelledTopk& l : local) {
                merged_values.insert(merged_values.end(), l.values.begin() + q * k,
                                     l.values.begin() + (q + 1) * k);
                merged_labels.insert(merged_labels.end(), l.labels.begin() + q * k,
                                     l.labels.begin() + (q + 1) * k);
            }
        }
        const LabelledTopk two_steps = labelled_topk_f64(merged_values, merged_labels, rows, k * world, k);
        const LabelledTopk one_step = labelled_topk_f64(all, labels, rows, width, k);
        EXPECT_EQ(two_steps.values, one_step.values) << "W = " << world;
        EXPECT_EQ(two_steps.labels, one_step.labels) << "W = " << world;
    }
}

} // namespace
} // namespace pkbw::tk
