// Problems 1-8: PKB's constant inputs, exact-mode values, output shapes per rank.
#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pkbw::test {
namespace {

std::vector<std::vector<Tensor>> inputs_of_all_ranks(const Problem& p, const ProblemConfig& c) {
    std::vector<std::vector<Tensor>> all;
    for (int r = 0; r < c.world_size; ++r) {
        all.push_back(p.build_inputs(c, r));
    }
    return all;
}

// Every element's sum over ranks is the same in forward, reverse and interleaved rank order with a
// rounding to the dtype after each add, and equals the exact (double) sum.
void expect_sums_exact(const std::vector<std::vector<Tensor>>& all, std::size_t input, DType dtype) {
    std::vector<Tensor> per_rank;
    for (const auto& inputs : all) {
        per_rank.push_back(inputs[input]);
    }
    const int world = static_cast<int>(per_rank.size());
    std::vector<int> forward(world);
    std::iota(forward.begin(), forward.end(), 0);
    std::vector<int> backward(forward.rbegin(), forward.rend());
    std::vector<int> interleaved;
    for (int r = 0; r < world; r += 2)
        interleaved.push_back(r);
    for (int r = 1; r < world; r += 2)
        interleaved.push_back(r);
    bool saw_fraction = false;
    for (std::int64_t i = 0; i < per_rank[0].numel(); ++i) {
        double exact = 0;
        for (const auto& t : per_rank) {
            const double v = t.get_f64(i);
            ASSERT_EQ(v * 4, std::floor(v * 4)) << "not a multiple of 1/4";
            ASSERT_LE(std::abs(v), 2.0);
            saw_fraction |= v != std::floor(v);
            exact += v;
        }
        ASSERT_EQ(rounded_sum(per_rank, i, forward), exact) << "element " << i;
        ASSERT_EQ(rounded_sum(per_rank, i, backward), exact) << "element " << i;
        ASSERT_EQ(rounded_sum(per_rank, i, interleaved), exact) << "element " << i;
        ASSERT_EQ(round_to(dtype, exact), exact);
    }
    EXPECT_TRUE(saw_fraction) << "exact values should use the 2^-2 scale";
}

TEST(AllReduce, PkbInputsAreRankPlusOne) {
    const Problem& p = problem("1");
    for (int world : {2, 4}) {
        const auto c = config(world, 8, 16);
        for (int r = 0; r < world; ++r) {
            const auto in = p.build_inputs(c, r);
            ASSERT_EQ(in.size(), 1u);
            EXPECT_EQ(in[0].shape(), (Shape{8, 16}));
            EXPECT_EQ(in[0].dtype(), DType::BF16);
            EXPECT_TRUE(all_equal(in[0], r + 1.0));
            const auto out = p.output_specs(c, r);
            ASSERT_EQ(out.size(), 1u);
            EXPECT_EQ(out[0].name, "output");
            EXPECT_EQ(out[0].shape, (Shape{8, 16}));
        }
    }
    // Identical in every trial, as in PKB.
    auto c = config(2);
    c.trial = 3;
    EXPECT_TRUE(all_equal(p.build_inputs(c, 1)[0], 2.0));
}

TEST(AllReduce, ExactInputsSumExactlyInAnyOrder) {
    const Problem& p = problem("1");
    for (int world : {2, 4, 8, 64}) {
        for (DType dtype : {DType::BF16, DType::F16, DType::F32}) {
            const auto c = config(world, 4, 64, dtype, InputMode::Exact);
            expect_sums_exact(inputs_of_all_ranks(p, c), 0, dtype);
        }
    }
}

TEST(AllReduce, WorkModelIsNcclTestsAllreduce) {
    const WorkModel w = problem("1").work(config(4, 1024, 1024));
    EXPECT_EQ(w.collective, CollectiveKind::AllReduce);
    EXPECT_EQ(w.collective_bytes, 1024.0 * 1024 * 2);
    EXPECT_EQ(w.flops, 1024.0 * 1024 * 3);
}

TEST(AllGather, ShapesAndConstants) {
    const Problem& p = problem("2");
    for (int world : {2, 4}) {
        const auto c = config(world, 8, 16);
        for (int r = 0; r < world; ++r) {
            EXPECT_TRUE(all_equal(p.build_inputs(c, r)[0], r + 1.0));
            const auto out = p.output_specs(c, r);
            ASSERT_EQ(out.size(), 1u);
            EXPECT_EQ(out[0].shape, (Shape{world, 8, 16}));
        }
    }
    const WorkModel w = p.work(config(4, 1024, 1024));
    EXPECT_EQ(w.collective, CollectiveKind::AllGather);
    EXPECT_EQ(w.collective_bytes, 4.0 * 1024 * 1024 * 2);
}

TEST(AllGather, ExactInputsAreQuarterIntegers) {
    const Problem& p = problem("2");
    const auto in = p.build_inputs(config(2, 4, 64, DType::BF16, InputMode::Exact), 0);
    for (std::int64_t i = 0; i < in[0].numel(); ++i) {
        const double v = in[0].get_f64(i);
        EXPECT_EQ(v * 4, std::floor(v * 4));
        EXPECT_LE(std::abs(v), 2.0);
    }
}

TEST(Broadcast, ConstantsAndSourceParam) {
    const Problem& p = problem("3");
    const auto c = config(4);
    for (int r = 0; r < 4; ++r) {
        EXPECT_TRUE(all_equal(p.build_inputs(c, r)[0], r + 1.0));
        EXPECT_EQ(p.output_specs(c, r)[0].shape, (Shape{8, 16}));
    }
    EXPECT_EQ(p.params(c).at("src"), 0.0);
    EXPECT_EQ(p.work(c).collective, CollectiveKind::Broadcast);
}

TEST(Reduce, ExactSumsAndDestinationParam) {
    const Problem& p = problem("4");
    EXPECT_EQ(p.params(config(2)).at("dst"), 0.0);
    for (int world : {2, 4}) {
        const auto c = config(world);
        for (int r = 0; r < world; ++r) {
            EXPECT_TRUE(all_equal(p.build_inputs(c, r)[0], r + 1.0));
            // Every rank, root or not, returns [M, N]: the sum on the root, its input elsewhere.
            EXPECT_EQ(p.output_specs(c, r)[0].shape, (Shape{8, 16}));
        }
        expect_sums_exact(inputs_of_all_ranks(p, config(world, 4, 64, DType::BF16, InputMode::Exact)), 0,
                          DType::BF16);
    }
}

TEST(Scatter, RootHoldsChunksOthersHoldZeros) {
    const Problem& p = problem("5");
    EXPECT_EQ(p.params(config(2)).at("src"), 0.0);
    for (int world : {2, 4}) {
        for (InputMode mode : {InputMode::Pkb, InputMode::Exact}) {
            const auto c = config(world, 8, 16, DType::BF16, mode);
            const auto root = p.build_inputs(c, 0);
            ASSERT_EQ(root[0].shape(), (Shape{world, 8, 16}));
            if (mode == InputMode::Pkb) {
                for (int i = 0; i < world; ++i) {
                    for (std::int64_t e = 0; e < 8 * 16; ++e) {
                        ASSERT_EQ(root[0].get_f64(i * 128 + e), i + 1.0) << "chunk " << i;
                    }
                }
            }
            for (int r = 1; r < world; ++r) {
                const auto in = p.build_inputs(c, r);
                EXPECT_EQ(in[0].shape(), (Shape{8, 16}));
                EXPECT_TRUE(all_equal(in[0], 0.0)) << "rank " << r << " mode " << input_mode_name(mode);
            }
            for (int r = 0; r < world; ++r) {
                EXPECT_EQ(p.output_specs(c, r)[0].shape, (Shape{8, 16}));
            }
        }
    }
}

TEST(Gather, RootOutputIsStackedOthersKeepInputShape) {
    const Problem& p = problem("6");
    EXPECT_EQ(p.params(config(2)).at("dst"), 0.0);
    for (int world : {2, 4}) {
        const auto c = config(world);
        EXPECT_EQ(p.output_specs(c, 0)[0].shape, (Shape{world, 8, 16}));
        for (int r = 1; r < world; ++r) {
            EXPECT_EQ(p.output_specs(c, r)[0].shape, (Shape{8, 16}));
        }
        for (int r = 0; r < world; ++r) {
            EXPECT_TRUE(all_equal(p.build_inputs(c, r)[0], r + 1.0));
        }
    }
}

TEST(ReduceScatter, InputIsWRowBlocksOutputOne) {
    const Problem& p = problem("7");
    for (int world : {2, 4}) {
        const auto c = config(world);
        for (int r = 0; r < world; ++r) {
            const auto in = p.build_inputs(c, r);
            EXPECT_EQ(in[0].shape(), (Shape{world * 8, 16}));
            EXPECT_TRUE(all_equal(in[0], r + 1.0));
            EXPECT_EQ(p.output_specs(c, r)[0].shape, (Shape{8, 16}));
        }
        expect_sums_exact(inputs_of_all_ranks(p, config(world, 4, 64, DType::BF16, InputMode::Exact)), 0,
                          DType::BF16);
    }
    const WorkModel w = p.work(config(4, 1024, 1024));
    EXPECT_EQ(w.collective, CollectiveKind::ReduceScatter);
    EXPECT_EQ(w.collective_bytes, 4.0 * 1024 * 1024 * 2);
}

TEST(AllToAll, ChunkDOfRankRIsTenRPlusD) {
    const Problem& p = problem("8");
    for (int world : {2, 4}) {
        const auto c = config(world);
        for (int r = 0; r < world; ++r) {
            const auto in = p.build_inputs(c, r);
            ASSERT_EQ(in[0].shape(), (Shape{world, 8, 16}));
            for (int d = 0; d < world; ++d) {
                EXPECT_EQ(in[0].get_f64(d * 128), 10.0 * r + d);
                EXPECT_EQ(in[0].get_f64(d * 128 + 127), 10.0 * r + d);
            }
            EXPECT_EQ(p.output_specs(c, r)[0].shape, (Shape{world, 8, 16}));
        }
    }
}

} // namespace
} // namespace pkbw::test
