// Problems 25, 48 and 63 (issue 15, batch B1): 48's TP x FSDP factoring and the slicing of one shared
// draw, 25's None leaf and label range, 63's fixed fp64 lists and nested output names.
#include "test_util.h"

namespace pkbw::test {
namespace {

ProblemConfig defaults(int world) {
    return config(world, 1024, 1024);
}

TEST(FsdpAndTp48, GridFactoringAndShapes) {
    const Problem& p = problem("48");
    const std::pair<int, int> grids[] = {{1, 2}, {2, 2}, {2, 3}, {2, 4}, {1, 5}};
    const int worlds[] = {2, 4, 6, 8, 5};
    for (int k = 0; k < 5; ++k) {
        const auto params = p.params(defaults(worlds[k]));
        EXPECT_EQ(params.at("n_tp"), grids[k].first) << "W=" << worlds[k];
        EXPECT_EQ(params.at("n_fsdp"), grids[k].second) << "W=" << worlds[k];
    }
    // W = 4 (2 x 2): D = 256, D_ff = 1024, B = 2048.
    const auto in = p.input_specs(defaults(4), 3);
    EXPECT_EQ(in.at(0).shape, (Shape{1024, 256}));
    EXPECT_EQ(in.at(1).shape, (Shape{128, 512}));
    EXPECT_EQ(in.at(3).shape, (Shape{512, 128}));
    EXPECT_EQ(p.output_specs(defaults(4), 3).at(0).shape, (Shape{1024, 256}));
    // W = 2 (1 x 2) at the test shape: D = 128, D_ff = 64, B = 128.
    EXPECT_EQ(p.input_specs(config(2, 64, 128), 1).at(1).shape, (Shape{64, 64}));
}

TEST(FsdpAndTp48, BlocksOfOneSharedDraw) {
    const Problem& p = problem("48");
    // W = 4: ranks 0 and 1 share FSDP block 0 of x; rank 2 has block 1.
    const auto r0 = p.build_inputs(defaults(4), 0);
    const auto r1 = p.build_inputs(defaults(4), 1);
    const auto r2 = p.build_inputs(defaults(4), 2);
    EXPECT_TRUE(r0[0].bitwise_equal(r1[0]));
    EXPECT_NE(r0[0].get_f64(0), r2[0].get_f64(0));
    // The same full W3 [1024, 256] at W = 2 and 4: W = 4 rank 1 (tp 1, fsdp 0) holds rows 512.. of
    // columns 0..127, which W = 2 rank 0 (the 1 x 2 grid) holds as rows 512.. of its [1024, 128].
    const auto w2 = p.build_inputs(defaults(2), 0);
    const auto w2_rank1 = p.build_inputs(defaults(2), 1);
    for (std::int64_t r = 0; r < 512; r += 37)
        for (std::int64_t c = 0; c < 128; c += 11)
            ASSERT_EQ(r1[3].get_f64(r * 128 + c), w2[3].get_f64((512 + r) * 128 + c));
    // W1 at W = 4 rank 2 (tp 0, fsdp 1): rows 128.. of columns 0..511 of the full W1 [256, 1024];
    // W = 2 rank 1 holds rows 128.. of every column.
    for (std::int64_t r = 0; r < 128; r += 13)
        for (std::int64_t c = 0; c < 512; c += 29)
            ASSERT_EQ(r2[1].get_f64(r * 512 + c),
                      w2_rank1[1].get_f64(r * 1024 + c)); // rows 128.. at W = 2 too
}

TEST(ImportanceSampling25, OutputsAndLabels) {
    const Problem& p = problem("25");
    const auto out = p.output_specs(defaults(2), 0);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].name, "output_0");
    EXPECT_EQ(out[0].dtype, DType::F32);
    EXPECT_EQ(out[0].shape, Shape{});
    EXPECT_EQ(out[1].name, "output_2");
    EXPECT_EQ(out[1].dtype, DType::BF16);
    EXPECT_EQ(out[3].name, "output_4");
    EXPECT_EQ(out[3].shape, Shape{5});
    EXPECT_EQ(p.checked_output_values(defaults(2), 1),
              (std::map<std::string, std::string>{{"output_1", "null"}}));
    EXPECT_EQ(p.input_specs(config(2, 16, 32), 0).at(1).shape, (Shape{32000, 32}));
    const auto in = p.build_inputs(config(2, 256, 8), 1);
    EXPECT_EQ(in[2].dtype(), DType::I64);
    for (std::int64_t i = 0; i < in[2].numel(); ++i) {
        ASSERT_GE(in[2].get_f64(i), 0);
        ASSERT_LT(in[2].get_f64(i), 32000);
    }
    EXPECT_EQ(p.params(defaults(2)).at("ignore_index"), -100.0);
}

TEST(KalmanFilter63, FixedFp64ListsAndNestedOutputs) {
    const Problem& p = problem("63");
    const auto in = p.input_specs(config(4, 8, 16, DType::BF16), 0);
    ASSERT_EQ(in.size(), 25u);
    EXPECT_EQ(in[0].name, "H[0]");
    EXPECT_EQ(in[8].name, "error");
    EXPECT_EQ(in[8].shape, Shape{});
    EXPECT_EQ(in[9].name, "weights[0]");
    EXPECT_EQ(in[24].name, "P[7]");
    EXPECT_EQ(in[24].shape, (Shape{1024, 1024}));
    for (const auto& s : in)
        EXPECT_EQ(s.dtype, DType::F64) << s.name;
    const auto out = p.output_specs(config(2), 0);
    ASSERT_EQ(out.size(), 16u + 8 + 1);
    EXPECT_EQ(out[15].name, "output_0[15]");
    EXPECT_EQ(out[16].name, "output_1[0]");
    EXPECT_EQ(out[24].name, "output_2");
    EXPECT_TRUE(p.info().mutates_inputs);
    const auto x = p.build_inputs(config(2), 1);
    EXPECT_EQ(x[17].get_f64(0), 1.0);
    EXPECT_EQ(x[17].get_f64(1), 0.0);
    EXPECT_EQ(x[17].get_f64(1025), 1.0);
    EXPECT_EQ(p.params(config(2)).at("kalman_lambda"), 0.98);
}

} // namespace
} // namespace pkbw::test
