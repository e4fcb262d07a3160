// Problem::tie_rows (issue 16): the default names no rows; checked_tie_rows validates and normalises
// what a problem names.
#include "pkbw/core/error.h"
#include "pkbw/core/problem.h"

#include <algorithm>
#include <gtest/gtest.h>

using namespace pkbw;

namespace {

// A router problem in miniature: input "probs" [M, 4] (already softmaxed), output "output" [M, 3] and a
// 0-dim "output_1"; a token is a tie row when its 2nd and 3rd largest probabilities are equal.
class RouterProblem : public Problem {
public:
    const ProblemInfo& info() const override {
        static const ProblemInfo i{998, "998_router", "MoE", "router", "", 1e-2, 1e-2, false, true};
        return i;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"probs", DType::F32, {c.m, 4}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", DType::F32, {c.m, 3}}, {"output_1", DType::F32, {}}};
    }
    void make_inputs(const ProblemConfig&, int, std::vector<Tensor>&) const override {}
    TieRowsByOutput tie_rows(const ProblemConfig&, int, const std::vector<Tensor>& inputs) const override {
        const Tensor& probs = inputs.at(0);
        TieRows ties{{}, "top-2 of the router softmax: 2nd and 3rd equal"};
        for (std::int64_t t = 0; t < probs.shape()[0]; ++t) {
            std::vector<float> row(4);
            for (int e = 0; e < 4; ++e)
                row[e] = probs.get_f32(t * 4 + e);
            std::sort(row.rbegin(), row.rend());
            if (row[1] == row[2])
                ties.rows.push_back(t);
        }
        return {{"output", ties}};
    }
};

Tensor probs_of(const std::vector<std::vector<float>>& rows) {
    Tensor t = Tensor::zeros(DType::F32, {static_cast<std::int64_t>(rows.size()), 4});
    for (std::size_t r = 0; r < rows.size(); ++r)
        for (int e = 0; e < 4; ++e)
            t.mutable_data_as<float>()[r * 4 + e] = rows[r][e];
    return t;
}

// Returns the tie rows tie_rows gives, through checked_tie_rows.
struct FixedTies : RouterProblem {
    TieRowsByOutput fixed;
    TieRowsByOutput tie_rows(const ProblemConfig&, int, const std::vector<Tensor>&) const override {
        return fixed;
    }
};

std::string error_of(const FixedTies& p, const ProblemConfig& c) {
    try {
        p.checked_tie_rows(c, 1, {});
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST(TieRows, DefaultNamesNoRows) {
    struct Plain : RouterProblem {
        TieRowsByOutput tie_rows(const ProblemConfig& c, int r,
                                 const std::vector<Tensor>& in) const override {
            return Problem::tie_rows(c, r, in);
        }
    };
    ProblemConfig c;
    c.m = 3;
    const std::vector<Tensor> inputs{
        probs_of({{0.4f, 0.2f, 0.2f, 0.2f}, {0.1f, 0.2f, 0.3f, 0.4f}, {0.25f, 0.25f, 0.25f, 0.25f}})};
    EXPECT_TRUE(Plain{}.tie_rows(c, 0, inputs).empty());
    EXPECT_TRUE(Plain{}.checked_tie_rows(c, 0, inputs).empty());
}

TEST(TieRows, AnOverrideNamesTheTiedTokens) {
    ProblemConfig c;
    c.m = 3;
    const std::vector<Tensor> inputs{
        probs_of({{0.4f, 0.2f, 0.2f, 0.2f}, {0.1f, 0.2f, 0.3f, 0.4f}, {0.25f, 0.25f, 0.25f, 0.25f}})};
    const TieRowsByOutput ties = RouterProblem{}.checked_tie_rows(c, 0, inputs);
    ASSERT_EQ(ties.size(), 1u);
    EXPECT_EQ(ties.at("output").rows, (std::vector<std::int64_t>{0, 2}));
    EXPECT_EQ(ties.at("output").rule, "top-2 of the router softmax: 2nd and 3rd equal");
}

TEST(TieRows, CheckedSortsDropsEmptyAndRejectsBadNames) {
    ProblemConfig c;
    c.m = 5;
    FixedTies p;
    p.fixed = {{"output", {{4, 1, 4, 0}, "rule"}}, {"output_1", {{}, "rule"}}};
    const TieRowsByOutput ties = p.checked_tie_rows(c, 1, {});
    ASSERT_EQ(ties.size(), 1u); // output_1 named no rows
    EXPECT_EQ(ties.at("output").rows, (std::vector<std::int64_t>{0, 1, 4}));

    p.fixed = {{"output_1", {{0}, "a 0-dim output has one row"}}};
    EXPECT_EQ(p.checked_tie_rows(c, 1, {}).at("output_1").rows, (std::vector<std::int64_t>{0}));

    p.fixed = {{"output_9", {{0}, "rule"}}};
    EXPECT_EQ(error_of(p, c), "998_router rank 1: tie rows of 'output_9': no tensor output has that name");
    p.fixed = {{"output", {{2, 5}, "rule"}}};
    EXPECT_EQ(error_of(p, c), "998_router rank 1: tie rows of 'output': row 5 is outside [0, 5)");
    p.fixed = {{"output", {{-1}, "rule"}}};
    EXPECT_EQ(error_of(p, c), "998_router rank 1: tie rows of 'output': row -1 is outside [0, 5)");
    p.fixed = {{"output_1", {{1}, "rule"}}};
    EXPECT_EQ(error_of(p, c), "998_router rank 1: tie rows of 'output_1': row 1 is outside [0, 1)");
    p.fixed = {{"output", {{1}, ""}}};
    EXPECT_EQ(error_of(p, c), "998_router rank 1: tie rows of 'output': the rule text is empty");
}
