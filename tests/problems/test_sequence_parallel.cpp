// Problems 39, 72 and 77's descriptors: 39's draws keep a margin between each head-axis softmax row's two
// largest scores (head_margin.h), 72's structured inputs and shapes, 77's sizes at W = 1..8 (PKB's head
// adjustments) and its reduced shape.
#include "../../problems/39_ulysses_attention_e2e/head_margin.h"
#include "test_util.h"

#include <cmath>

namespace pkbw::test {
namespace {

// The smallest gap over the rows of every token of rank `rank`'s draw, as the margin check computes it.
bool every_token_separated(const std::vector<Tensor>& inputs, int world, double margin) {
    const Tensor& hidden = inputs[0];
    const std::int64_t width = hidden.shape().back(), tokens = hidden.numel() / width;
    const std::vector<double> weights = inputs[1].to_f64(), all = hidden.to_f64();
    for (std::int64_t t = 0; t < tokens; ++t) {
        const std::vector<double> row(all.begin() + t * width, all.begin() + (t + 1) * width);
        if (!problems::token_well_separated(row, weights, 8, 64, world, margin)) {
            return false;
        }
    }
    return true;
}

TEST(UlyssesAttentionDraws, EveryTokenKeepsTheMargin) {
    for (const DType dtype : {DType::F32, DType::BF16}) {
        for (const int world : {1, 2, 4}) {
            for (int trial : {0, 1, (1 << 24) + 7}) {
                ProblemConfig c = config(world, 128, 1024, dtype);
                c.trial = trial;
                const auto inputs = problem("39").build_inputs(c, world - 1);
                EXPECT_TRUE(every_token_separated(inputs, world, problems::head_score_margin(dtype)))
                    << dtype_name(dtype) << " W=" << world << " trial " << trial;
            }
        }
    }
}

TEST(UlyssesAttentionDraws, OnlyNearTieTokensAreRedrawn) {
    // PKB's plain draw (streams 0 and 1) against the conditioned one: tokens that had the margin are
    // untouched, and at this size (128 tokens x 8 rows) some tokens lacked it and were drawn again.
    ProblemConfig c = config(2, 128, 1024, DType::BF16);
    const auto conditioned = problem("39").build_inputs(c, 0);
    std::vector<Tensor> plain;
    for (const auto& spec : problem("39").input_specs(c, 0)) {
        plain.push_back(Tensor::zeros(spec.dtype, spec.shape));
    }
    for (std::size_t k = 0; k < plain.size(); ++k) {
        const CounterRng rng(pkb_seed(c.seed, 39, 0, c.trial), k);
        std::byte* data = plain[k].mutable_data();
        for (std::int64_t i = 0; i < plain[k].numel(); ++i) {
            f64_to_element(DType::BF16, rng.normal(static_cast<std::uint64_t>(i)), data + 2 * i);
        }
    }
    const std::int64_t width = 512, tokens = plain[0].numel() / width;
    int redrawn = 0;
    const double margin = problems::head_score_margin(DType::BF16);
    const std::vector<double> weights = plain[1].to_f64();
    for (std::int64_t t = 0; t < tokens; ++t) {
        std::vector<double> before(static_cast<std::size_t>(width)), after(before.size());
        for (std::int64_t e = 0; e < width; ++e) {
            before[e] = plain[0].get_f64(t * width + e);
            after[e] = conditioned[0].get_f64(t * width + e);
        }
        const bool kept = problems::token_well_separated(before, weights, 8, 64, 2, margin);
        EXPECT_EQ(kept, before == after) << "token " << t;
        redrawn += kept ? 0 : 1;
    }
    EXPECT_GT(redrawn, 0);
    EXPECT_LT(redrawn, tokens);
    for (std::int64_t i = 0; i < plain[1].numel(); ++i) {
        ASSERT_EQ(plain[1].get_f64(i), conditioned[1].get_f64(i)); // the weights stay PKB's draws
    }
}

TEST(HyenaForwardCp, ShapesAndStructuredInputs) {
    const Problem& p = problem("72");
    const ProblemConfig c = config(2, 1024, 1024, DType::BF16);
    const auto in = p.input_specs(c, 0);
    ASSERT_EQ(in.size(), 5u);
    EXPECT_EQ(in[0].shape, (Shape{1, 1024, 2048}));
    EXPECT_EQ(in[3].shape, (Shape{1024, 4096}));
    EXPECT_EQ(p.output_specs(c, 1)[0].shape, (Shape{1, 2048, 1024}));
    EXPECT_EQ(p.params(c).at("num_groups"), 1024);
    const auto inputs = p.build_inputs(c, 1);
    // h = (arange in bf16) / 4096, rounded to bf16 twice: row 1000, column 5 is bf16(4096005) / 4096.
    EXPECT_EQ(inputs[3].get_f64(1000 * 4096 + 5), round_to(DType::BF16, 4096005.0) / 4096);
    EXPECT_EQ(inputs[4].get_f64(300), round_to(DType::BF16, round_to(DType::BF16, 300.0) / 1024));
    EXPECT_TRUE(p.check_config(config(3, 1024, 1024)).has_value()); // W must divide C
    EXPECT_FALSE(p.check_config(config(8, 64, 16)).has_value());
}

TEST(MagiCsoAttention, PkbSizesAndHeadAdjustments) {
    const Problem& p = problem("77");
    struct Row {
        int world;
        std::int64_t tokens, q_heads, kv_heads;
    };
    // PKB: S = ceil(K / W), tokens 4 S; Hq 24 (W <= 4) or 48, rounded to W's multiple; Hkv 8, or W.
    for (const Row& r : {Row{1, 48600, 24, 8}, Row{2, 24300, 24, 8}, Row{3, 16200, 24, 3},
                         Row{4, 12152, 24, 8}, Row{6, 14400, 48, 6}, Row{8, 10800, 48, 8}}) {
        const ProblemConfig c = config(r.world, 1024, 1024, DType::F16);
        ASSERT_FALSE(p.check_config(c).has_value()) << r.world;
        const auto in = p.input_specs(c, 0);
        EXPECT_EQ(in[0].shape, (Shape{r.tokens, r.q_heads, 128})) << r.world;
        EXPECT_EQ(in[1].shape, (Shape{r.tokens, r.kv_heads, 256})) << r.world;
        EXPECT_EQ(in[0].dtype, DType::BF16); // PKB's attn_dtype for f16
    }
    const ProblemConfig small = config(2, 64, 16, DType::F32);
    EXPECT_EQ(p.params(small).at("clip_token_nums"), 189); // 12150 * 16 / 1024
    const auto inputs = p.build_inputs(small, 0);
    EXPECT_EQ(inputs[0].dtype(), DType::F32);
    EXPECT_EQ(inputs[2].get_f64(5), 3 * 189); // k_ranges[2][1]
    EXPECT_TRUE(p.check_config(config(2, 64, 0)).has_value());
}

} // namespace
} // namespace pkbw::test
