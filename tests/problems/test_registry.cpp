#include "test_util.h"

namespace pkbw::test {
namespace {

TEST(Registry, ListsProblemsInIdOrderWithMatchingStems) {
    const auto& list = all_problems();
    ASSERT_GE(list.size(), 2u);
    for (std::size_t i = 0; i < list.size(); ++i) {
        const ProblemInfo& info = list[i]->info();
        EXPECT_EQ(info.stem.substr(0, info.stem.find('_')), std::to_string(info.id)) << info.stem;
        EXPECT_EQ(info.atol, 1e-2);
        EXPECT_EQ(info.rtol, 1e-2);
        EXPECT_FALSE(info.title.empty());
        EXPECT_FALSE(info.description.empty());
        if (i > 0) {
            EXPECT_LT(list[i - 1]->info().id, info.id);
        }
    }
    EXPECT_EQ(list[0]->info().stem, "1_allreduce");
    EXPECT_EQ(list[1]->info().stem, "2_allgather");
}

TEST(Registry, FindsByNumberStemAndScriptName) {
    EXPECT_EQ(find_problem("2"), find_problem("2_allgather"));
    EXPECT_EQ(find_problem("2_allgather.py"), find_problem("2"));
    ASSERT_NE(find_problem("1"), nullptr);
    EXPECT_EQ(find_problem("1")->info().id, 1);
}

TEST(Registry, UnknownKeysGiveNull) {
    EXPECT_EQ(find_problem(""), nullptr);
    EXPECT_EQ(find_problem("999"), nullptr);
    EXPECT_EQ(find_problem("allreduce"), nullptr);
    EXPECT_EQ(find_problem("2_allgathe"), nullptr);
    EXPECT_EQ(find_problem(".py"), nullptr);
    EXPECT_EQ(find_problem("1x"), nullptr);
}

TEST(Registry, FolderIsUnderProblems) {
    EXPECT_EQ(problem_folder(problem("2")), "problems/2_allgather");
}

TEST(CheckConfig, RefusesBadWorldSizesShapesAndDtypes) {
    for (const Problem* p : all_problems()) {
        const std::string& stem = p->info().stem;
        EXPECT_TRUE(p->check_config(config(0)).has_value()) << stem;
        EXPECT_TRUE(p->check_config(config(65)).has_value()) << stem;
        EXPECT_TRUE(p->check_config(config(2, 0, 16)).has_value()) << stem;
        EXPECT_TRUE(p->check_config(config(2, 8, 16, DType::I32)).has_value()) << stem;
        const auto why = p->check_config(config(2, 8, 16, DType::I32));
        ASSERT_TRUE(why.has_value());
        EXPECT_NE(why->find(stem), std::string::npos) << *why;
    }
}

TEST(CheckConfig, IncludesTheWorldRuleOfEveryProblem) {
    // check_world is what a PKB run of the same problem is refused by; check_config must agree with it
    // at the problem's own default shape, and a rule of the world size alone names the problem.
    int rules = 0;
    for (const Problem* p : all_problems()) {
        const std::string& stem = p->info().stem;
        for (int w = 1; w <= 8; ++w) {
            const auto world = p->check_world(w);
            if (!world)
                continue;
            ++rules;
            EXPECT_NE(world->find(stem), std::string::npos) << *world;
            EXPECT_TRUE(p->check_config(config(w, 1024, 1024, DType::BF16)).has_value())
                << stem << " W=" << w;
        }
    }
    // 49 (top-2 over E = W experts) refuses W = 1 and nothing else; W = 2 runs.
    ASSERT_TRUE(problem("49").check_world(1).has_value());
    EXPECT_NE(problem("49").check_world(1)->find("top-2 needs at least 2 experts"), std::string::npos);
    EXPECT_FALSE(problem("49").check_world(2).has_value());
    EXPECT_FALSE(problem("31").check_world(1).has_value());
    EXPECT_GE(rules, 1);
}

TEST(Inputs, ExactModeSeedsDifferPerRankAndTrialAndAreDeterministic) {
    for (const Problem* p : all_problems()) {
        auto c = config(4, 8, 256, DType::BF16, InputMode::Exact);
        if (p->check_config(c)) {
            continue;
        }
        // Rank 0, since a root's inputs are random in every problem (scatter's other ranks hold zeros).
        const auto a = p->build_inputs(c, 0);
        const auto again = p->build_inputs(c, 0);
        const auto other_rank = p->build_inputs(c, 1);
        c.trial = 1;
        const auto other_trial = p->build_inputs(c, 0);
        ASSERT_FALSE(a.empty());
        for (std::size_t k = 0; k < a.size(); ++k) {
            EXPECT_TRUE(a[k].bitwise_equal(again[k])) << p->info().stem << " input " << k;
        }
        bool rank_differs = false;
        bool trial_differs = false;
        for (std::size_t k = 0; k < a.size(); ++k) {
            rank_differs |= a[k].shape() != other_rank[k].shape() || !a[k].bitwise_equal(other_rank[k]);
            trial_differs |= !a[k].bitwise_equal(other_trial[k]);
        }
        EXPECT_TRUE(rank_differs) << p->info().stem;
        EXPECT_TRUE(trial_differs) << p->info().stem;
    }
}

} // namespace
} // namespace pkbw::test
