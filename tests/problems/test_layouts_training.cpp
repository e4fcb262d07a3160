// Problems 21, 23, 30, 33-38, 44, 45, 52, 53, 65 (issue 15, batch B1): PKB's shapes at the defaults for
// W = 2 and 4, the W constraints, and the input quirks (shared gamma, constant history and counts,
// list params).
#include "test_util.h"

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

ProblemConfig defaults(int world) {
    return config(world, 1024, 1024);
}

TEST(UlyssesLayouts, ShapesAtPkbDefaults) {
    EXPECT_EQ(shapes(problem("33").output_specs(defaults(4), 1)), (std::vector<Shape>{{256, 4096}}));
    EXPECT_EQ(shapes(problem("34").output_specs(defaults(2), 0)), (std::vector<Shape>{{2048, 1024}}));
    EXPECT_EQ(shapes(problem("35").output_specs(defaults(4), 3)), (std::vector<Shape>{{4096, 1024}}));
    EXPECT_EQ(shapes(problem("36").input_specs(defaults(2), 0)), (std::vector<Shape>{{16, 16, 8, 64}}));
    EXPECT_EQ(shapes(problem("36").output_specs(defaults(4), 0)), (std::vector<Shape>{{16, 64, 2, 64}}));
    EXPECT_EQ(shapes(problem("37").output_specs(defaults(4), 2)), (std::vector<Shape>{{16, 4, 32, 64}}));
    EXPECT_EQ(shapes(problem("38").input_specs(defaults(2), 1)), (std::vector<Shape>{{16, 16, 1536}}));
    EXPECT_EQ(shapes(problem("38").output_specs(defaults(2), 1)), (std::vector<Shape>{{16, 32, 768}}));
}

TEST(UlyssesLayouts, WorldSizeConstraints) {
    for (const char* key : {"36", "37", "38"}) {
        EXPECT_TRUE(refuses(key, defaults(3))) << key;
        EXPECT_FALSE(refuses(key, defaults(8))) << key;
    }
    EXPECT_TRUE(refuses("33", config(3, 1024, 1024)));  // 3 does not divide M = 1024
    EXPECT_FALSE(refuses("33", config(3, 1023, 1024))); // 3 divides 1023
    EXPECT_FALSE(refuses("34", defaults(3)));
}

TEST(UlyssesLayouts, SequencePaddingOf37) {
    // N = 192: T = 3, W = 4 pads to 4, one position per rank.
    EXPECT_EQ(shapes(problem("37").output_specs(config(4, 1024, 192), 0)),
              (std::vector<Shape>{{16, 1, 32, 64}}));
}

TEST(TrainingSteps, ShapesAndParams) {
    const Problem& clip = problem("21");
    EXPECT_EQ(shapes(clip.input_specs(defaults(2), 0)),
              (std::vector<Shape>{{1024, 1024}, {1024, 1024}, {1024, 1024}}));
    EXPECT_EQ(clip.output_specs(defaults(2), 0).at(0).shape, Shape{});
    EXPECT_EQ(clip.output_specs(defaults(2), 0).at(0).dtype, DType::F32);
    EXPECT_TRUE(clip.info().mutates_inputs);
    EXPECT_EQ(clip.params(defaults(2)).at("max_norm"), 1.0);
    EXPECT_EQ(shapes(problem("30").output_specs(defaults(4), 0)),
              (std::vector<Shape>{{8, 1024}, {8, 1024}, {1024, 8}}));
    EXPECT_EQ(shapes(problem("44").input_specs(defaults(2), 0)), (std::vector<Shape>{{1048576}}));
    EXPECT_EQ(problem("44").params(config(2, 1024, 40)).at("block_size"), 16.0);
    EXPECT_EQ(problem("44").params(defaults(2)).at("block_size"), 128.0);
    // 45: hidden 128, rows 256 for W <= 4 and 128 at W = 8.
    EXPECT_EQ(shapes(problem("45").output_specs(defaults(4), 0)), (std::vector<Shape>{{256, 128}}));
    EXPECT_EQ(shapes(problem("45").output_specs(defaults(8), 0)), (std::vector<Shape>{{128, 128}}));
    EXPECT_EQ(shapes(problem("45").input_specs(defaults(2), 0)), (std::vector<Shape>{{65536}, {128}}));
    EXPECT_EQ(shapes(problem("52").input_specs(defaults(4), 0)), (std::vector<Shape>{{16384}, {16}}));
    EXPECT_EQ(shapes(problem("53").output_specs(defaults(4), 0)), (std::vector<Shape>{{16384}, {16}}));
}

TEST(TrainingSteps, InputQuirks) {
    // 23: counts are the configuration's constants, as int64 0-dim tensors.
    const auto acc = problem("23").build_inputs(defaults(4), 1);
    EXPECT_EQ(acc[1].dtype(), DType::I64);
    EXPECT_EQ(acc[1].get_f64(0), 1024.0 * 1024);
    EXPECT_EQ(acc[2].get_f64(0), 4.0 * 1024 * 1024);
    EXPECT_EQ(acc[3].get_f64(0), 1.0);
    EXPECT_EQ(acc[4].get_f64(0), 0.0);
    // 45: gamma is drawn under rank 0's seed on every rank; the activations differ.
    const auto r0 = problem("45").build_inputs(defaults(2), 0);
    const auto r1 = problem("45").build_inputs(defaults(2), 1);
    for (std::int64_t i = 0; i < r0[1].numel(); ++i)
        ASSERT_EQ(r0[1].get_f64(i), r1[1].get_f64(i));
    EXPECT_NE(r0[0].get_f64(0), r1[0].get_f64(0));
    // 52: the amax history starts as bf16(1e-8) everywhere.
    const auto fp8 = problem("52").build_inputs(defaults(2), 1);
    EXPECT_EQ(fp8[1].dtype(), DType::BF16);
    EXPECT_TRUE(all_equal(fp8[1], round_to(DType::BF16, 1e-8)));
}

TEST(TrainingSteps, EpLayoutOf22) {
    const Problem& p = problem("22");
    EXPECT_EQ(p.params(defaults(2)).at("ep_size"), 1.0);
    EXPECT_EQ(p.params(defaults(4)).at("ep_size"), 2.0);
    EXPECT_EQ(p.params(defaults(8)).at("ep_size"), 4.0);
    EXPECT_EQ(shapes(p.input_specs(defaults(4), 3)), (std::vector<Shape>{{1024, 1024}, {1024, 1024}}));
    EXPECT_TRUE(p.info().mutates_inputs);
}

TEST(GnnFeatureExchange, SizesAndListParams) {
    const Problem& p = problem("65");
    EXPECT_EQ(shapes(p.input_specs(defaults(2), 0)), (std::vector<Shape>{{768, 128}, {1024}}));
    EXPECT_EQ(shapes(p.output_specs(defaults(4), 0)), (std::vector<Shape>{{1024, 128}}));
    const auto params = p.params(defaults(4));
    EXPECT_EQ(params.at("counts_sent[]"), 4.0);
    EXPECT_EQ(params.at("counts_sent[3]"), 256.0);
    EXPECT_EQ(params.at("counts_received[0]"), 256.0);
    const auto in = p.build_inputs(defaults(2), 1);
    for (std::int64_t i = 0; i < in[1].numel(); ++i) {
        ASSERT_GE(in[1].get_f64(i), 0.0);
        ASSERT_LT(in[1].get_f64(i), 768.0);
    }
}

} // namespace
} // namespace pkbw::test
