// Problems 9-20: shapes per rank at W = 2 and 4, configuration refusals, input distributions.
#include "test_util.h"

#include <cmath>

namespace pkbw::test {
namespace {

std::vector<Shape> shapes(const std::vector<TensorSpec>& specs) {
    std::vector<Shape> out;
    for (const auto& s : specs)
        out.push_back(s.shape);
    return out;
}

bool refuses(const char* key, const ProblemConfig& c) {
    return problem(key).check_config(c).has_value();
}

TEST(AllGatherGemm, ShapesAndRefusals) {
    const Problem& p = problem("12");
    EXPECT_EQ(shapes(p.input_specs(config(2, 64, 32), 0)), (std::vector<Shape>{{64, 256}, {512, 32}}));
    EXPECT_EQ(shapes(p.input_specs(config(4, 64, 32), 3)), (std::vector<Shape>{{64, 128}, {512, 32}}));
    EXPECT_EQ(shapes(p.output_specs(config(4, 64, 32), 1)), (std::vector<Shape>{{64, 32}}));
    EXPECT_TRUE(refuses("12", config(3, 64, 32)));
    EXPECT_FALSE(refuses("12", config(8, 64, 32)));
    const WorkModel w = p.work(config(4, 1024, 1024));
    EXPECT_EQ(w.flops, 2.0 * 1024 * 1024 * 512);
    EXPECT_EQ(w.collective_bytes, 1024.0 * 512 * 2);
}

TEST(AllGatherGemm, PkbInputsLookStandardNormal) {
    const auto in = problem("12").build_inputs(config(2, 256, 256, DType::F32), 0);
    double sum = 0, sq = 0;
    const auto& b = in[1];
    for (std::int64_t i = 0; i < b.numel(); ++i) {
        sum += b.get_f64(i);
        sq += b.get_f64(i) * b.get_f64(i);
    }
    const double n = static_cast<double>(b.numel());
    EXPECT_NEAR(sum / n, 0.0, 0.02);
    EXPECT_NEAR(sq / n, 1.0, 0.03);
    // A and B come from different streams.
    EXPECT_NE(in[0].get_f64(0), in[1].get_f64(0));
}

TEST(GemmAllReduce, Shapes) {
    const Problem& p = problem("13");
    EXPECT_EQ(shapes(p.input_specs(config(4, 64, 32), 2)), (std::vector<Shape>{{64, 512}, {512, 32}}));
    EXPECT_EQ(shapes(p.output_specs(config(4, 64, 32), 2)), (std::vector<Shape>{{64, 32}}));
    EXPECT_EQ(p.work(config(4)).collective, CollectiveKind::AllReduce);
}

TEST(GemmAllGather, ShapesAndRefusals) {
    const Problem& p = problem("14");
    EXPECT_EQ(shapes(p.input_specs(config(4, 64, 32), 0)), (std::vector<Shape>{{64, 512}, {512, 8}}));
    EXPECT_EQ(shapes(p.output_specs(config(4, 64, 32), 0)), (std::vector<Shape>{{64, 32}}));
    EXPECT_TRUE(refuses("14", config(3, 64, 32)));
    EXPECT_TRUE(refuses("14", config(4, 64, 30)));
    EXPECT_FALSE(refuses("14", config(2, 64, 30)));
}

TEST(GemmReduceScatter, ShapesAndRefusals) {
    const Problem& p = problem("16");
    EXPECT_EQ(shapes(p.input_specs(config(4, 64, 32), 1)), (std::vector<Shape>{{64, 128}, {128, 32}}));
    EXPECT_EQ(shapes(p.output_specs(config(4, 64, 32), 1)), (std::vector<Shape>{{16, 32}}));
    EXPECT_EQ(shapes(p.output_specs(config(2, 64, 32), 1)), (std::vector<Shape>{{32, 32}}));
    EXPECT_TRUE(refuses("16", config(4, 66, 32)));
    EXPECT_TRUE(refuses("16", config(3, 63, 32)));
}

TEST(LayerNormBackward, RowsOfXHatHaveUnitNormAndOutputsAreTwoVectors) {
    const Problem& p = problem("9");
    const auto c = config(4, 16, 64, DType::F32);
    const auto in = p.build_inputs(c, 1);
    ASSERT_EQ(in.size(), 2u);
    for (std::int64_t i = 0; i < 16; ++i) {
        double sq = 0;
        for (std::int64_t j = 0; j < 64; ++j)
            sq += in[0].get_f64(i * 64 + j) * in[0].get_f64(i * 64 + j);
        EXPECT_NEAR(sq, 1.0, 1e-4) << "row " << i;
    }
    const auto out = p.output_specs(c, 1);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].name, "output_0");
    EXPECT_EQ(out[1].name, "output_1");
    EXPECT_EQ(out[0].shape, (Shape{64}));
    EXPECT_EQ(out[1].shape, (Shape{64}));
}

TEST(TpRmsNorm, ShapesAndEpsilon) {
    const Problem& p = problem("18");
    EXPECT_EQ(shapes(p.input_specs(config(2, 8, 16), 0)), (std::vector<Shape>{{8, 16}, {16}}));
    EXPECT_EQ(shapes(p.output_specs(config(4, 8, 16), 3)), (std::vector<Shape>{{8, 16}}));
    EXPECT_EQ(p.params(config(2)).at("variance_epsilon"), 1e-5);
    EXPECT_EQ(p.work(config(2, 8, 16)).collective_bytes, 8.0 * 4);
}

TEST(RopeAllGather, ShapesFollowPkbAttentionDims) {
    const Problem& p = problem("17");
    // M = N = 1024: B = 16, T = 16, S = T / W.
    const auto c = config(4, 1024, 1024);
    EXPECT_EQ(shapes(p.input_specs(c, 0)),
              (std::vector<Shape>{{16, 4, 8, 64}, {16, 4, 8, 64}, {16, 4, 64}, {16, 4, 64}}));
    EXPECT_EQ(shapes(p.output_specs(c, 2)), (std::vector<Shape>{{16, 16, 8, 64}, {16, 16, 8, 64}}));
    EXPECT_EQ(shapes(p.output_specs(config(2, 1024, 1024), 0)),
              (std::vector<Shape>{{16, 16, 8, 64}, {16, 16, 8, 64}}));
    // Small M and N clamp to 1.
    EXPECT_EQ(shapes(p.input_specs(config(2, 8, 16), 0))[0], (Shape{1, 1, 8, 64}));
    EXPECT_TRUE(refuses("17", config(3)));
    EXPECT_TRUE(refuses("17", config(16)));
}

TEST(BlockedFp8Quantize, OutputsAreFp8ValuesAndFp32Scales) {
    const Problem& p = problem("19");
    const auto out = p.output_specs(config(4, 8, 256), 1);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].dtype, DType::F8E4M3);
    EXPECT_EQ(out[0].shape, (Shape{32, 256}));
    EXPECT_EQ(out[1].dtype, DType::F32);
    EXPECT_EQ(out[1].shape, (Shape{32, 2}));
    EXPECT_TRUE(refuses("19", config(2, 8, 200)));
    EXPECT_EQ(p.params(config(2)).at("block_size"), 128.0);
}

TEST(BlockedFp8Dequantize, ShapesAndRefusals) {
    const Problem& p = problem("20");
    const auto c = config(2, 8, 16);
    EXPECT_EQ(shapes(p.input_specs(c, 0)), (std::vector<Shape>{{2, 8, 16}, {2, 1}}));
    EXPECT_EQ(p.output_specs(c, 0)[0].dtype, DType::F32);
    EXPECT_EQ(p.output_specs(c, 0)[0].shape, (Shape{2, 8, 16}));
    EXPECT_TRUE(refuses("20", config(2, 3, 5)));
    EXPECT_EQ(p.work(config(4, 1024, 1024)).collective_bytes, 4.0 * 1024 * 1024 * 4);
}

TEST(AllGatherGemmAT, SameShapesAsTwelve) {
    const Problem& p = problem("11");
    for (int world : {2, 4}) {
        const auto c = config(world, 64, 32);
        EXPECT_EQ(shapes(p.input_specs(c, 0)), shapes(problem("12").input_specs(c, 0)));
        EXPECT_EQ(shapes(p.output_specs(c, 0)), (std::vector<Shape>{{64, 32}}));
    }
    EXPECT_TRUE(refuses("11", config(3)));
}

TEST(CombinedShardedGemms, RoundsRowsAndHiddenUpToW) {
    const Problem& p = problem("15");
    // M = 1024, W = 8: Mr = 1024, H = 256, H/W = 32; output [128, 256].
    EXPECT_EQ(shapes(p.input_specs(config(8, 1024, 1024), 5)),
              (std::vector<Shape>{{1024, 32}, {256, 512}, {512, 256}}));
    EXPECT_EQ(shapes(p.output_specs(config(8, 1024, 1024), 5)), (std::vector<Shape>{{128, 256}}));
    // W = 3 rounds both up: Mr = 12 for M = 10, H = 258.
    EXPECT_EQ(shapes(p.input_specs(config(3, 10, 16), 0)),
              (std::vector<Shape>{{12, 86}, {258, 512}, {512, 258}}));
    EXPECT_EQ(shapes(p.output_specs(config(3, 10, 16), 2)), (std::vector<Shape>{{4, 258}}));
    EXPECT_EQ(shapes(p.output_specs(config(2, 1024, 1024), 0)), (std::vector<Shape>{{512, 256}}));
}

TEST(EmbeddingLookup, IndicesAreInt64InTheGlobalTable) {
    const Problem& p = problem("10");
    for (int world : {2, 4}) {
        const auto c = config(world, 64, 16);
        const auto in = p.build_inputs(c, 1);
        ASSERT_EQ(in[0].dtype(), DType::I64);
        ASSERT_EQ(in[0].shape(), (Shape{64}));
        EXPECT_EQ(in[1].shape(), (Shape{64, 16}));
        std::vector<int> owners(world, 0);
        for (std::int64_t i = 0; i < 64; ++i) {
            const auto v = in[0].data_as<std::int64_t>()[i];
            ASSERT_GE(v, 0);
            ASSERT_LT(v, world * 64);
            ++owners[v / 64];
        }
        for (int o : owners)
            EXPECT_GT(o, 0) << "64 uniform indices should reach every owner";
        EXPECT_EQ(shapes(p.output_specs(c, 0)), (std::vector<Shape>{{64, 16}}));
    }
}

} // namespace
} // namespace pkbw::test
