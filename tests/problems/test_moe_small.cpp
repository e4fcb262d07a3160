// Problems 24 (load-balancing loss) and 26 (MoE token preprocessing): shapes, world-size rules, the
// structure of 26's one-hot mask, and 24's tie rows (issue 16's hook) on hand-made and on real inputs.
#include "test_util.h"

#include <gtest/gtest.h>

using namespace pkbw;
using pkbw::test::config;
using pkbw::test::problem;

TEST(LoadBalancing24, ShapesAndParams) {
    const Problem& p = problem("24");
    for (int w : {1, 2, 3, 4, 8}) {
        EXPECT_FALSE(p.check_config(config(w, 64, 128)).has_value()) << "W=" << w;
    }
    const ProblemConfig c = config(2, 64, 128);
    ASSERT_EQ(p.input_specs(c, 0).size(), 1u);
    EXPECT_EQ(p.input_specs(c, 0)[0].shape, (Shape{64, 8}));
    EXPECT_EQ(p.output_specs(c, 1)[0].shape, Shape{});
    EXPECT_EQ(p.output_specs(c, 1)[0].dtype, DType::F32);
    EXPECT_EQ(p.params(c).at("num_experts"), 8.0);
    EXPECT_EQ(p.params(c).at("top_k"), 2.0);
}

TEST(LoadBalancing24, TieRowsOfHandMadeLogits) {
    const Problem& p = problem("24");
    const ProblemConfig c = config(1, 2, 16, DType::BF16);
    std::vector<Tensor> inputs = p.build_inputs(c, 0);
    auto set_row = [&](int t, std::vector<double> logits) {
        for (int e = 0; e < 8; ++e) {
            f64_to_element(DType::BF16, logits[e], inputs[0].mutable_data() + (t * 8 + e) * 2);
        }
    };
    set_row(0, {0, 2, 1, 0, 0, 0, 0, 0.5});
    set_row(1, {0, 3, 0, 0, 0, 3, 0, 0}); // 1st == 2nd: the selected set is {1, 5} either way
    EXPECT_TRUE(p.checked_tie_rows(c, 0, inputs).empty());
    set_row(1, {0, 3, 1, 0, 0, 0, 1, 0}); // experts 2 and 6 tie for the second slot
    const TieRowsByOutput ties = p.checked_tie_rows(c, 0, inputs);
    ASSERT_EQ(ties.count("output"), 1u);
    EXPECT_EQ(ties.at("output").rows, (std::vector<std::int64_t>{0}));
    EXPECT_NE(ties.at("output").rule.find("bf16"), std::string::npos) << ties.at("output").rule;
    EXPECT_NE(ties.at("output").rule.find("for 1 tokens on 1 ranks"), std::string::npos)
        << ties.at("output").rule;
}

TEST(LoadBalancing24, TieRowsOfRealInputsSeeEveryRank) {
    const Problem& p = problem("24");
    // bf16 at M = 256: 8 probabilities with 8 significand bits tie on several tokens per rank (seed 42:
    // 3 on rank 0, 5 on rank 1). The loss is global, so each rank's row 0 counts every rank's ties.
    const ProblemConfig bf16 = config(2, 256, 16, DType::BF16);
    for (int r = 0; r < 2; ++r) {
        const TieRowsByOutput ties = p.checked_tie_rows(bf16, r, p.build_inputs(bf16, r));
        ASSERT_EQ(ties.count("output"), 1u) << "rank " << r;
        EXPECT_NE(ties.at("output").rule.find("on 2 ranks"), std::string::npos) << ties.at("output").rule;
    }
    // fp32 probabilities of normal logits practically never tie.
    const ProblemConfig f32 = config(2, 256, 16, DType::F32);
    EXPECT_TRUE(p.checked_tie_rows(f32, 0, p.build_inputs(f32, 0)).empty());
}

TEST(MoeTokenPreprocess26, WorldMustDivideEightAndShapes) {
    const Problem& p = problem("26");
    EXPECT_TRUE(p.check_config(config(3, 64, 128)).has_value());
    EXPECT_TRUE(p.check_config(config(16, 64, 128)).has_value());
    for (int w : {1, 2, 4, 8}) {
        const ProblemConfig c = config(w, 64, 128);
        ASSERT_FALSE(p.check_config(c).has_value()) << "W=" << w;
        const auto out = p.output_specs(c, 0);
        ASSERT_EQ(out.size(), 4u);
        EXPECT_EQ(out[0].dtype, DType::I64);
        EXPECT_EQ(out[0].shape, (Shape{w}));
        EXPECT_EQ(out[1].shape, (Shape{w}));
        EXPECT_EQ(out[2].shape, (Shape{w, 8 / w}));
        EXPECT_EQ(out[2].dtype, DType::F32);
        EXPECT_EQ(out[3].shape, (Shape{8 / w}));
    }
}

TEST(MoeTokenPreprocess26, MaskIsOneHotPerTokenAndSlotWhateverTheDtype) {
    const Problem& p = problem("26");
    const ProblemConfig c = config(2, 64, 128, DType::BF16);
    ASSERT_EQ(p.input_specs(c, 0)[0].dtype, DType::F32);
    const Tensor mask = p.build_inputs(c, 1)[0];
    ASSERT_EQ(mask.shape(), (Shape{8, 2, 64}));
    int same_expert_twice = 0;
    for (int t = 0; t < 64; ++t) {
        int chosen[2] = {-1, -1};
        for (int k = 0; k < 2; ++k) {
            double column = 0;
            for (int e = 0; e < 8; ++e) {
                const double v = mask.get_f64((e * 2 + k) * 64 + t);
                ASSERT_TRUE(v == 0.0 || v == 1.0);
                column += v;
                chosen[k] = v == 1.0 ? e : chosen[k];
            }
            EXPECT_EQ(column, 1.0) << "token " << t << " slot " << k;
        }
        same_expert_twice += chosen[0] == chosen[1] ? 1 : 0;
    }
    EXPECT_LT(same_expert_twice, 32); // repeats happen (1 in 8) but are not the rule
}

TEST(FusedMoeLora32, LoraInputsAndWorldRule) {
    const Problem& p = problem("32");
    EXPECT_TRUE(p.check_config(config(3, 64, 128)).has_value());
    const ProblemConfig c = config(4, 64, 128);
    ASSERT_FALSE(p.check_config(c).has_value());
    const auto specs = p.input_specs(c, 0);
    ASSERT_EQ(specs.size(), 15u);
    EXPECT_EQ(specs[9].name, "lora_gate_A");
    EXPECT_EQ(specs[9].shape, (Shape{8, 128}));
    EXPECT_EQ(specs[14].name, "lora_down_B");
    EXPECT_EQ(specs[14].shape, (Shape{128, 8}));
    EXPECT_EQ(p.output_specs(c, 0)[0].shape, (Shape{64, 128}));
    EXPECT_EQ(p.params(c).at("ep_size"), 4.0);
}

TEST(FusedMoeLora32, TieRowsOfARealRankWithATie) {
    const Problem& p = problem("32");
    // bf16, W = 4, M = N = 256, seed 42: torch's CPU router on rank 3's inputs (PKB's reference in the
    // cross-check) finds exactly one token whose 2nd and 3rd probabilities are equal, token 115, and
    // PKB's topk sent it to the other expert there: all 164 mismatching elements of that cross-check
    // row lie in row 115 (README). The hook must name that row.
    const ProblemConfig c = config(4, 256, 256, DType::BF16);
    const TieRowsByOutput ties = p.checked_tie_rows(c, 3, p.build_inputs(c, 3));
    ASSERT_EQ(ties.count("output"), 1u);
    EXPECT_EQ(ties.at("output").rows, (std::vector<std::int64_t>{115}));
    EXPECT_NE(ties.at("output").rule.find("lower expert index"), std::string::npos) << ties.at("output").rule;
    // rank 1 has none (torch found none either)
    EXPECT_TRUE(p.checked_tie_rows(c, 1, p.build_inputs(c, 1)).empty());
}
