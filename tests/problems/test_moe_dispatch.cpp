// Problems 27, 28, 29 (issue 16, batch B2: MoE dispatch and combine): PKB's shapes at the defaults
// for W = 2 and 4, the W constraints, the list params and the structured inputs (one-hot mask with
// distinct experts, synthetic counts, a routing map consistent with its permutation and weights).
#include "test_util.h"

#include <set>

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

TEST(MoeAllToAllPrimitive, ShapesListsAndRefusals) {
    const Problem& p = problem("27");
    EXPECT_EQ(shapes(p.input_specs(defaults(4), 0)), (std::vector<Shape>{{1024, 1024}}));
    EXPECT_EQ(shapes(p.output_specs(defaults(4), 3)), (std::vector<Shape>{{1024, 1024}}));
    const auto params = p.params(defaults(4));
    EXPECT_EQ(params.at("input_split_sizes[]"), 4.0);
    EXPECT_EQ(params.at("input_split_sizes[3]"), 256.0);
    EXPECT_EQ(params.at("output_split_sizes[0]"), 256.0);
    EXPECT_FALSE(refuses("27", defaults(8)));
    EXPECT_FALSE(refuses("27", config(1, 7, 16)));
    EXPECT_TRUE(refuses("27", config(4, 1022, 16))); // PKB's remainder-on-last lists disagree
}

TEST(MoePreAllToAll, ShapesParamsAndSizeLeaf) {
    const Problem& p = problem("28");
    EXPECT_EQ(shapes(p.input_specs(defaults(2), 0)),
              (std::vector<Shape>{{1024, 1024}, {8, 2, 1024}, {2, 4}}));
    EXPECT_EQ(shapes(p.input_specs(defaults(4), 1)),
              (std::vector<Shape>{{1024, 1024}, {8, 2, 1024}, {4, 2}}));
    EXPECT_EQ(shapes(p.output_specs(defaults(4), 0)), (std::vector<Shape>{{2048, 1024}, {8, 1024}, {2048}}));
    EXPECT_EQ(p.output_specs(defaults(2), 0)[1].dtype, DType::F32);
    EXPECT_EQ(p.output_specs(defaults(2), 0)[2].dtype, DType::I64);
    EXPECT_EQ(p.output_values(config(2, 64, 128), 1).at("output_3"), "[64, 128]");
    const auto params = p.params(defaults(4));
    EXPECT_EQ(params.at("num_experts"), 8.0);
    EXPECT_EQ(params.at("input_splits[]"), 4.0);
    EXPECT_EQ(params.at("output_splits[2]"), 512.0);
    EXPECT_TRUE(refuses("28", config(3, 64, 16)));  // W must divide 8
    EXPECT_TRUE(refuses("28", config(16, 64, 16))); // too
    EXPECT_TRUE(refuses("28", config(4, 65, 16)));  // 4 does not divide 2M = 130
    EXPECT_FALSE(refuses("28", config(2, 65, 16)));
    EXPECT_FALSE(refuses("28", config(8, 64, 16)));
}

TEST(MoePreAllToAll, MaskPicksTwoDistinctExpertsPerToken) {
    const Problem& p = problem("28");
    const ProblemConfig c = config(4, 66, 8);
    const auto in = p.build_inputs(c, 2);
    const Tensor& mask = in[1]; // [8, 2, M]
    for (std::int64_t t = 0; t < c.m; ++t) {
        std::set<int> experts;
        for (int j = 0; j < 2; ++j) {
            int ones = 0;
            for (int e = 0; e < 8; ++e) {
                const double v = mask.get_f64((e * 2 + j) * c.m + t);
                ASSERT_TRUE(v == 0.0 || v == 1.0);
                if (v == 1.0) {
                    ++ones;
                    experts.insert(e);
                }
            }
            ASSERT_EQ(ones, 1) << "token " << t << " slot " << j;
        }
        ASSERT_EQ(experts.size(), 2u) << "token " << t;
    }
    // Counts [W, L]: 2M = 132 over 8 slots, 17 for the first 4 and 16 after.
    double total = 0;
    for (std::int64_t i = 0; i < in[2].numel(); ++i) {
        EXPECT_EQ(in[2].get_f64(i), i < 4 ? 17.0 : 16.0);
        total += in[2].get_f64(i);
    }
    EXPECT_EQ(total, 132.0);
    // Ranks draw different masks.
    const auto other = p.build_inputs(c, 3);
    bool differs = false;
    for (std::int64_t i = 0; i < mask.numel() && !differs; ++i)
        differs = mask.get_f64(i) != other[1].get_f64(i);
    EXPECT_TRUE(differs);
}

TEST(MoePostAllToAll, ShapesAndRefusals) {
    const Problem& p = problem("29");
    EXPECT_EQ(shapes(p.input_specs(defaults(4), 0)),
              (std::vector<Shape>{{2048, 1024}, {1024, 2}, {1024, 2}, {4, 2}, {8, 1024}, {2048}}));
    EXPECT_EQ(p.input_specs(defaults(2), 0)[4].dtype, DType::Bool);
    EXPECT_EQ(shapes(p.output_specs(defaults(2), 1)), (std::vector<Shape>{{1024, 1024}}));
    const auto params = p.params(defaults(2));
    EXPECT_EQ(params.at("org_hidden_states_shape[0]"), 1024.0);
    EXPECT_EQ(params.at("input_splits[1]"), 1024.0);
    EXPECT_TRUE(refuses("29", config(6, 64, 16)));
    EXPECT_TRUE(refuses("29", config(8, 66, 16))); // 8 does not divide 132
    EXPECT_FALSE(refuses("29", config(4, 66, 16)));
}

// The map routes each token to the two selected experts, the permutation is the map's masked_select
// order, and the weights are a softmax in the dtype.
TEST(MoePostAllToAll, RoutingInputsAreConsistent) {
    const Problem& p = problem("29");
    const ProblemConfig c = config(2, 40, 8, DType::BF16);
    const auto in = p.build_inputs(c, 1);
    const Tensor &weights = in[1], &selected = in[2], &map = in[4], &perm = in[5];
    for (std::int64_t t = 0; t < c.m; ++t) {
        const double a = selected.get_f64(t * 2), b = selected.get_f64(t * 2 + 1);
        EXPECT_LT(a, b);
        int routed = 0;
        for (int e = 0; e < 8; ++e)
            routed += map.get_f64(e * c.m + t) != 0.0;
        EXPECT_EQ(routed, 2);
        EXPECT_EQ(map.get_f64(static_cast<std::int64_t>(a) * c.m + t), 1.0);
        EXPECT_EQ(map.get_f64(static_cast<std::int64_t>(b) * c.m + t), 1.0);
        const double w0 = weights.get_f64(t * 2), w1 = weights.get_f64(t * 2 + 1);
        EXPECT_EQ(w0, round_to(DType::BF16, w0));
        EXPECT_NEAR(w0 + w1, 1.0, 1.0 / 128); // two bf16 roundings
    }
    std::int64_t i = 0;
    for (int e = 0; e < 8; ++e)
        for (std::int64_t t = 0; t < c.m; ++t)
            if (map.get_f64(e * c.m + t) != 0.0) {
                EXPECT_EQ(perm.get_f64(i++), static_cast<double>(t));
            }
    EXPECT_EQ(i, perm.numel());
}

} // namespace
} // namespace pkbw::test
