// The MoE dispatch/combine bookkeeping (moe_permute.h, moe_permute_host.h) and the structured input
// generators (moe_inputs.h), against brute-force restatements of PKB's PyTorch steps.
#include "pkbw/core/random.h"
#include "pkbw/toolkit/moe_inputs.h"
#include "pkbw/toolkit/moe_permute_host.h"

#include <gtest/gtest.h>
#include <numeric>
#include <set>
#include <vector>

namespace tk = pkbw::tk;
using pkbw::DType;

namespace {

// A [rows, n] matrix whose row r holds r * 1000 + column: every row is recognisable.
std::vector<double> labelled_rows(long long rows, long long n) {
    std::vector<double> v(static_cast<std::size_t>(rows * n));
    for (long long r = 0; r < rows; ++r)
        for (long long c = 0; c < n; ++c)
            v[static_cast<std::size_t>(r * n + c)] = static_cast<double>(r * 1000 + c);
    return v;
}

} // namespace

// masked_select over arange(T).expand(E, T): expert-major, tokens ascending within an expert.
TEST(MoePermute, ExpertMajorIndicesAreMaskedSelectOrder) {
    // E = 3, T = 4; map[e][t]
    const std::vector<float> map = {0, 1, 1, 0, /**/ 1, 0, 0, 1, /**/ 0, 0, 2.5f, 0};
    EXPECT_EQ(tk::expert_major_indices(map, 3, 4), (std::vector<long long>{1, 2, 0, 3, 2}));
    const auto perm = tk::expert_major_permutation_host(std::vector<double>(map.begin(), map.end()), 3, 4);
    EXPECT_EQ(perm.sorted_indices, (std::vector<long long>{1, 2, 0, 3, 2}));
    EXPECT_EQ(perm.row_experts, (std::vector<int>{0, 0, 1, 1, 2}));
    EXPECT_EQ(perm.counts, (std::vector<long long>{2, 2, 1}));
    // -0.0 is not routed, NaN is (torch's .bool()).
    const std::vector<double> odd = {-0.0, std::nan("")};
    EXPECT_EQ(tk::expert_major_permutation_host(odd, 1, 2).sorted_indices, (std::vector<long long>{1}));
}

// 28's regroup: W = 2 ranks, E = 4 experts (L = 2); received chunks are (w, l) = w·L + l.
TEST(MoePermute, LocalExpertMajorRegroupAndItsInverse) {
    EXPECT_EQ(tk::local_expert_major_order(4, 2), (std::vector<int>{0, 2, 1, 3}));
    EXPECT_EQ(tk::rank_major_order(4, 2), (std::vector<int>{0, 2, 1, 3}));
    EXPECT_EQ(tk::local_expert_major_order(8, 2), (std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7}));
    EXPECT_EQ(tk::rank_major_order(8, 2), (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));

    const int experts = 8, ranks = 2, local = experts / ranks;
    // counts [W, L], rows labelled by their chunk.
    const std::vector<long long> counts = {3, 0, 2, 1, 1, 4, 0, 2};
    const long long rows = std::accumulate(counts.begin(), counts.end(), 0LL);
    std::vector<double> received;
    for (int chunk = 0; chunk < experts; ++chunk)
        for (long long r = 0; r < counts[chunk]; ++r)
            received.push_back(chunk * 100 + static_cast<double>(r));
    std::vector<tk::ChunkCopy> plan;
    ASSERT_EQ(tk::sort_chunks_plan(counts, tk::local_expert_major_order(experts, ranks), rows, plan), "");
    const std::vector<double> regrouped = tk::sort_chunks_host(received, 1, plan);
    // Expected: for l, for w: chunk w·L + l's rows.
    std::vector<double> expected;
    for (int l = 0; l < local; ++l)
        for (int w = 0; w < ranks; ++w)
            for (long long r = 0; r < counts[w * local + l]; ++r)
                expected.push_back((w * local + l) * 100 + static_cast<double>(r));
    EXPECT_EQ(regrouped, expected);
    // 29's way back: split by counts.T.ravel(), order rank_major_order: the original rows.
    std::vector<tk::ChunkCopy> back;
    ASSERT_EQ(tk::sort_chunks_plan(tk::transposed(counts, ranks, local), tk::rank_major_order(experts, ranks),
                                   rows, back),
              "");
    EXPECT_EQ(tk::sort_chunks_host(regrouped, 1, back), received);
    // Byte version on two-column int rows.
    std::vector<long long> wide(static_cast<std::size_t>(rows * 2));
    std::iota(wide.begin(), wide.end(), 0LL);
    std::vector<long long> moved(wide.size());
    tk::sort_chunks_bytes_host(wide.data(), 2 * sizeof(long long), plan, moved.data());
    EXPECT_EQ(moved, tk::sort_chunks_host(wide, 2, plan));
}

TEST(MoePermute, SortChunksPlanRefusesWhatTorchRefuses) {
    std::vector<tk::ChunkCopy> plan;
    EXPECT_NE(tk::sort_chunks_plan({2, 2}, {0, 1}, 5, plan).find("sum to 4 but the input has 5"),
              std::string::npos);
    EXPECT_NE(tk::sort_chunks_plan({2, -1, 4}, {0, 1, 2}, 5, plan).find("negative"), std::string::npos);
    EXPECT_NE(tk::sort_chunks_plan({2, 3}, {0, 2}, 5, plan).find("outside the 2 chunks"), std::string::npos);
    // Empty chunks are skipped; a repeated chunk is copied twice (torch.cat takes any list).
    ASSERT_EQ(tk::sort_chunks_plan({2, 0, 3}, {2, 1, 0, 2}, 5, plan), "");
    ASSERT_EQ(plan.size(), 3u);
    EXPECT_EQ(tk::planned_rows(plan), 8);
    EXPECT_EQ(plan[0].src_row, 2);
    EXPECT_EQ(plan[1].src_row, 0);
    EXPECT_EQ(plan[1].dst_row, 3);
    EXPECT_EQ(plan[2].dst_row, 5);
}

TEST(MoePermute, GatherRowsIsIndexSelect) {
    const auto rows = labelled_rows(4, 3);
    const auto out = tk::gather_rows_host(rows, 3, {3, 0, 3});
    EXPECT_EQ(out, (std::vector<double>{3000, 3001, 3002, 0, 1, 2, 3000, 3001, 3002}));
}

// _generate_weights_idx: duplicates add (rounded to D each time), bad experts are an error.
TEST(MoePermute, DenseRoutingWeights) {
    std::string err;
    // T = 2, k = 2, E = 3. Token 1 picks expert 2 twice.
    const auto dense =
        tk::dense_routing_weights_host({0.25, 0.75, 0.5, 0.5}, {1, 0, 2, 2}, 2, 2, 3, DType::F32, err);
    EXPECT_EQ(err, "");
    EXPECT_EQ(dense, (std::vector<double>{0.75, 0.25, 0, /**/ 0, 0, 1.0}));
    // bf16: 1 + 2^-9 rounds to 1 (bf16 has 8 significand bits).
    const auto rounded = tk::dense_routing_weights_host({1.0, 0x1p-9}, {0, 0}, 1, 2, 1, DType::BF16, err);
    EXPECT_EQ(rounded, (std::vector<double>{1.0}));
    EXPECT_TRUE(tk::dense_routing_weights_host({1.0}, {3}, 1, 1, 3, DType::F32, err).empty());
    EXPECT_NE(err.find("selected expert 3 of token 0"), std::string::npos);
}

TEST(MoePermute, PermutedRowWeightsFollowTheMap) {
    // E = 2, T = 3: expert 0 routes tokens 0, 2; expert 1 routes 1, 2.
    const std::vector<double> map = {1, 0, 1, 0, 1, 1};
    const auto perm = tk::expert_major_permutation_host(map, 2, 3);
    // dense [T, E]
    const std::vector<double> dense = {0.1, 0.0, 0.0, 0.2, 0.3, 0.4};
    EXPECT_EQ(tk::permuted_row_weights_host(dense, perm, 2), (std::vector<double>{0.1, 0.3, 0.2, 0.4}));
}

// _unpermute: products and adds rounded to D in row order; f32 keeps what bf16 loses.
TEST(MoePermute, UnpermuteScatterAddRoundsLikeTorch) {
    std::string err;
    // Three rows into token 0 (n = 1): 1, then 2^-8, then 2^-8. In bf16 each add of 2^-8 to 1 is a
    // tie that rounds to even (1), so the sum stays 1; an f64 sum would give 1 + 2^-7.
    const std::vector<double> rows = {1.0, 0x1p-8, 0x1p-8};
    const auto bf = tk::unpermute_scatter_add_host(rows, {}, {0, 0, 0}, 1, 1, DType::BF16, err);
    EXPECT_EQ(bf, (std::vector<double>{1.0}));
    const auto f32 = tk::unpermute_scatter_add_host(rows, {}, {0, 0, 0}, 1, 1, DType::F32, err);
    EXPECT_EQ(f32, (std::vector<double>{1.0 + 0x1p-7}));
    // Order matters: small terms first survive in bf16.
    const auto small_first =
        tk::unpermute_scatter_add_host({0x1p-8, 0x1p-8, 1.0}, {}, {0, 0, 0}, 1, 1, DType::BF16, err);
    EXPECT_EQ(small_first, (std::vector<double>{1.0 + 0x1p-7}));
    // Weighted: the product is rounded before the add. 3 * (1/3 in bf16) != 1 exactly.
    const double third = pkbw::tk::round_to(DType::BF16, 1.0 / 3.0);
    const auto weighted =
        tk::unpermute_scatter_add_host({3.0, 2.0, 5.0, 7.0}, {third, 0.5}, {1, 1}, 2, 2, DType::BF16, err);
    const double p0 = pkbw::tk::round_to(DType::BF16, 3.0 * third), p1 = 2.5;
    EXPECT_EQ(weighted,
              (std::vector<double>{
                  0, 0, pkbw::tk::round_to(DType::BF16, p0 + p1),
                  pkbw::tk::round_to(DType::BF16, pkbw::tk::round_to(DType::BF16, 2.0 * third) + 3.5)}));
    // Untouched tokens stay zero; out-of-range targets are an error.
    EXPECT_TRUE(tk::unpermute_scatter_add_host({1.0}, {}, {2}, 2, 1, DType::F32, err).empty());
    EXPECT_NE(err.find("maps to token 2"), std::string::npos);
}

// The full 28 -> 29 round trip on one rank (W = 1: the all-to-all is the identity): permute by the
// map, regroup, regroup back, combine with weights 1 gives k copies of each token summed.
TEST(MoePermute, DispatchThenCombineRestoresTokens) {
    const long long tokens = 6, n = 4, experts = 4, topk = 2;
    const pkbw::CounterRng rng(7, 1);
    const auto choices = tk::distinct_expert_choices(rng, tokens, topk, experts);
    const auto mask = tk::one_hot_expert_mask(choices, tokens, topk, experts);
    std::vector<double> map(static_cast<std::size_t>(experts * tokens));
    for (long long e = 0; e < experts; ++e)
        for (long long j = 0; j < topk; ++j)
            for (long long t = 0; t < tokens; ++t)
                map[e * tokens + t] += mask[(e * topk + j) * tokens + t];
    const auto perm = tk::expert_major_permutation_host(map, experts, tokens);
    ASSERT_EQ(perm.rows(), tokens * topk);
    const auto hidden = labelled_rows(tokens, n);
    const auto permuted = tk::gather_rows_host(hidden, n, perm.sorted_indices);
    std::string err;
    const auto out =
        tk::unpermute_scatter_add_host(permuted, {}, perm.sorted_indices, tokens, n, DType::F64, err);
    ASSERT_EQ(err, "");
    for (std::size_t i = 0; i < out.size(); ++i)
        EXPECT_EQ(out[i], 2 * hidden[i]) << i;
}

TEST(MoeInputs, LinearInitBoundAndDraws) {
    EXPECT_DOUBLE_EQ(tk::linear_init_bound(256), 1.0 / 16);
    EXPECT_EQ(tk::linear_init_bound(0), 0.0);
    const pkbw::CounterRng rng(3, 2);
    const auto w = tk::linear_init_values(rng, 4096, 128);
    const double b = 1.0 / std::sqrt(128.0);
    double lo = 1, hi = -1, mean = 0;
    for (double v : w) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        mean += v / static_cast<double>(w.size());
    }
    EXPECT_GE(lo, -b);
    EXPECT_LT(hi, b);
    EXPECT_LT(lo, -0.9 * b); // spans the range
    EXPECT_GT(hi, 0.9 * b);
    EXPECT_LT(std::abs(mean), 0.05 * b);
    EXPECT_EQ(tk::linear_init_values(rng, 4096, 128), w); // deterministic
}

TEST(MoeInputs, ExpertChoices) {
    const pkbw::CounterRng rng(11, 0);
    const long long tokens = 500, topk = 2, experts = 8;
    const auto distinct = tk::distinct_expert_choices(rng, tokens, topk, experts);
    std::vector<int> hits(experts * topk, 0);
    for (long long t = 0; t < tokens; ++t) {
        const long long a = distinct[t * 2], b = distinct[t * 2 + 1];
        ASSERT_NE(a, b) << t;
        ASSERT_TRUE(a >= 0 && a < experts && b >= 0 && b < experts);
        ++hits[a * topk + 0];
        ++hits[b * topk + 1];
    }
    for (int h : hits) // every (expert, slot) drawn, roughly 500/8 times each
        EXPECT_GT(h, 30);
    // All eight experts distinct when topk = E: a permutation.
    const auto full = tk::distinct_expert_choices(rng, 3, 8, 8);
    for (int t = 0; t < 3; ++t)
        EXPECT_EQ(std::set<long long>(full.begin() + t * 8, full.begin() + t * 8 + 8).size(), 8u);
    // 26's randint choices may repeat within a token.
    const auto any = tk::random_expert_choices(rng, tokens, topk, experts);
    int repeats = 0;
    for (long long t = 0; t < tokens; ++t)
        repeats += any[t * 2] == any[t * 2 + 1];
    EXPECT_GT(repeats, 20); // ~1/8 of 500
    // one-hot mask [E, k, T]: exactly one 1 per (slot, token).
    const auto mask = tk::one_hot_expert_mask(any, tokens, topk, experts);
    for (long long j = 0; j < topk; ++j)
        for (long long t = 0; t < tokens; ++t) {
            double column = 0;
            for (long long e = 0; e < experts; ++e)
                column += mask[(e * topk + j) * tokens + t];
            ASSERT_EQ(column, 1.0);
            ASSERT_EQ(mask[(any[t * 2 + j] * topk + j) * tokens + t], 1.0);
        }
}

TEST(MoeInputs, SplitLists) {
    EXPECT_EQ(tk::equal_splits(10, 4), (std::vector<long long>{2, 2, 2, 4}));
    EXPECT_EQ(tk::equal_splits(8, 2), (std::vector<long long>{4, 4}));
    EXPECT_EQ(tk::spread_counts(10, 4), (std::vector<long long>{3, 3, 2, 2}));
    EXPECT_EQ(tk::spread_counts(3, 8), (std::vector<long long>{1, 1, 1, 0, 0, 0, 0, 0}));
}

// 29's inputs agree with each other: the map has topk experts per token, selected lists them
// ascending, the permutation is the map's masked_select order, weights are a softmax per token.
TEST(MoeInputs, ConsistentRouting) {
    const long long tokens = 64, topk = 2, experts = 8;
    const auto to_bf16 = [](double v) { return pkbw::tk::round_to(DType::BF16, v); };
    const auto r = tk::consistent_routing(pkbw::CounterRng(5, 1), pkbw::CounterRng(5, 2), tokens, topk,
                                          experts, to_bf16);
    ASSERT_EQ(r.selected.size(), static_cast<std::size_t>(tokens * topk));
    for (long long t = 0; t < tokens; ++t) {
        int routed = 0;
        for (long long e = 0; e < experts; ++e)
            routed += r.routing_map[e * tokens + t];
        EXPECT_EQ(routed, topk);
        EXPECT_LT(r.selected[t * 2], r.selected[t * 2 + 1]);
        EXPECT_TRUE(r.routing_map[r.selected[t * 2] * tokens + t]);
        EXPECT_TRUE(r.routing_map[r.selected[t * 2 + 1] * tokens + t]);
        EXPECT_NEAR(r.weights[t * 2] + r.weights[t * 2 + 1], 1.0, 1e-12);
        EXPECT_GT(r.weights[t * 2], 0.0);
    }
    EXPECT_EQ(r.permutation, tk::expert_major_indices(r.routing_map, experts, tokens));
    EXPECT_EQ(static_cast<long long>(r.permutation.size()), tokens * topk);
}
