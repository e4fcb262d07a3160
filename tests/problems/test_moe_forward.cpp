// The fused MoE forward family (31, 49, 50, 51): W rules, params, input shapes, the router's tie rule
// and the tie_rows hook on real inputs.
#include "pkbw/toolkit/moe_router.h"
#include "pkbw/toolkit/moe_router_host.h"
#include "pkbw/toolkit/moe_splits.h"
#include "test_util.h"

#include <algorithm>

namespace pkbw::test {
namespace {

std::vector<double> values(const Tensor& t) {
    std::vector<double> v(static_cast<std::size_t>(t.numel()));
    for (std::int64_t i = 0; i < t.numel(); ++i) {
        v[static_cast<std::size_t>(i)] = t.get_f64(i);
    }
    return v;
}

TEST(MoeForward, WorldRulesAndParams) {
    EXPECT_FALSE(problem("31").check_config(config(4)).has_value());
    EXPECT_TRUE(problem("31").check_config(config(3)).has_value()); // W must divide 8
    EXPECT_TRUE(problem("49").check_config(config(1)).has_value()); // top-2 of one expert
    EXPECT_FALSE(problem("50").check_config(config(3)).has_value());
    const auto p51 = problem("51").params(config(8));
    EXPECT_EQ(p51.at("num_experts"), 4);
    EXPECT_EQ(p51.at("top_k"), 2);
    EXPECT_EQ(p51.at("ep_size"), 4);
    const auto p51_w2 = problem("51").params(config(2));
    EXPECT_EQ(p51_w2.at("num_experts"), 1);
    EXPECT_EQ(p51_w2.at("top_k"), 1);
    EXPECT_EQ(p51_w2.at("ep_size"), 1);
    EXPECT_EQ(problem("50").params(config(4)).at("num_experts"), 8);
    const auto specs = problem("31").input_specs(config(2, 8, 16), 0);
    ASSERT_EQ(specs.size(), 9u);
    EXPECT_EQ(specs[1].shape, (Shape{8, 16}));
    EXPECT_EQ(specs[7].shape, (Shape{16, 128}));
}

TEST(MoeForward, LinearInitIsBoundedByFanIn) {
    const ProblemConfig c = config(2, 8, 64, DType::F32);
    const auto inputs = problem("31").build_inputs(c, 0);
    double gate = 0, down = 0;
    for (double v : values(inputs[3])) {
        gate = std::max(gate, std::abs(v));
    }
    for (double v : values(inputs[7])) {
        down = std::max(down, std::abs(v));
    }
    EXPECT_LE(gate, 1.0 / 8.0); // 1/sqrt(64)
    EXPECT_GT(gate, 0.9 / 8.0);
    EXPECT_LE(down, 1.0 / std::sqrt(128.0));
}

TEST(MoeRouter, TopKTieRuleAndTieRows) {
    const double probs[] = {0.1, 0.3, 0.2, 0.3, 0.1};
    int chosen[2];
    tk::router_top_k(probs, 5, 2, chosen);
    EXPECT_EQ(chosen[0], 1); // the two 0.3s: lower index first
    EXPECT_EQ(chosen[1], 3);
    EXPECT_FALSE(tk::router_is_tie_row(probs, 5, 2, chosen)); // 3rd (0.2) differs
    const double tied[] = {0.5, 0.2, 0.1, 0.2};
    tk::router_top_k(tied, 4, 2, chosen);
    EXPECT_EQ(chosen[1], 1); // 1 beats 3
    EXPECT_TRUE(tk::router_is_tie_row(tied, 4, 2, chosen));
    // Experts 1 and 3 tie; with two experts per owner they are on owners 0 and 1: still a tie row.
    EXPECT_TRUE(tk::router_is_tie_row(tied, 4, 2, chosen, 2));
    const double same_owner[] = {0.5, 0.1, 0.2, 0.2};
    tk::router_top_k(same_owner, 4, 2, chosen);
    EXPECT_EQ(chosen[1], 2);
    EXPECT_TRUE(tk::router_is_tie_row(same_owner, 4, 2, chosen));     // experts 2, 3: different ranks
    EXPECT_FALSE(tk::router_is_tie_row(same_owner, 4, 2, chosen, 2)); // both on rank 1: no value moves
    const double zeros[] = {1.0, 0.0, 0.0};
    tk::router_top_k(zeros, 3, 2, chosen);
    EXPECT_FALSE(tk::router_is_tie_row(zeros, 3, 2, chosen)); // a 0-weight tie changes nothing
}

TEST(MoeRouter, SplitsFromCounts) {
    // 2 EP ranks, 4 experts (2 local each); rank 1's view.
    const std::vector<long long> counts = {3, 1, 4, 0, /* rank 1: */ 2, 5, 1, 6};
    tk::MoeSplits s;
    ASSERT_EQ(tk::moe_splits_from_counts(counts, 2, 1, 4, s), "");
    EXPECT_EQ(s.input_splits, (std::vector<long long>{7, 7}));
    EXPECT_EQ(s.output_splits, (std::vector<long long>{4, 7}));
    EXPECT_EQ(s.per_local_expert, (std::vector<long long>{4, 0, 1, 6}));
    EXPECT_NE(tk::moe_splits_from_counts(counts, 3, 0, 4, s), "");
}

// Problem 50 at bf16, W = 4, 256 x 256 (the CPU cross-check's shape): the hook names every token whose
// 2nd and 3rd rounded router probabilities are equal with the tied experts on different ranks (2 experts
// per rank), and only those. PKB's CPU reference differs from pkbw's on rank 2's row 96, one of them.
TEST(MoeForward, TieRowsOnRealInputs) {
    const Problem& p = problem("50");
    const ProblemConfig c = config(4, 256, 256, DType::BF16);
    std::size_t total = 0;
    for (int rank = 0; rank < c.world_size; ++rank) {
        const auto inputs = p.build_inputs(c, rank);
        const auto ties = p.checked_tie_rows(c, rank, inputs);
        const tk::RouterHost router = tk::moe_router_f64(c.dtype, values(inputs[0]), values(inputs[1]),
                                                         values(inputs[2]), 256, 256, 8, 2);
        std::vector<std::int64_t> expected;
        for (std::int64_t t = 0; t < 256; ++t) {
            std::vector<double> row(router.probs.begin() + t * 8, router.probs.begin() + (t + 1) * 8);
            std::vector<double> sorted = row;
            std::sort(sorted.rbegin(), sorted.rend());
            std::vector<int> owners; // ranks (2 experts each) of every expert holding the 2nd value
            for (int e = 0; e < 8; ++e) {
                if (row[e] == sorted[1]) {
                    owners.push_back(e / 2);
                }
            }
            const bool mixed =
                std::count(owners.begin(), owners.end(), owners[0]) != static_cast<long>(owners.size());
            if (sorted[1] == sorted[2] && sorted[1] != 0 && mixed) {
                expected.push_back(t);
            }
        }
        const std::vector<std::int64_t> named =
            ties.count("output") ? ties.at("output").rows : std::vector<std::int64_t>{};
        EXPECT_EQ(named, expected) << "rank " << rank;
        if (!named.empty()) {
            EXPECT_NE(ties.at("output").rule.find("2nd and 3rd"), std::string::npos);
        }
        total += named.size();
        std::printf("50 bf16 W=4 256x256 rank %d: %zu tie rows:", rank, named.size());
        for (std::int64_t t : named) {
            std::printf(" %lld", static_cast<long long>(t));
        }
        std::printf("\n");
    }
    EXPECT_GT(total, 0u); // bf16 logits of magnitude ~16 tie often; these inputs do
}

} // namespace
} // namespace pkbw::test
