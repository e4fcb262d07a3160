// Problem::tie_rows (issue 16): the default names no rows; checked_tie_rows validates and normalises
// what a problem names.
#include "pkbw/core/compare.h"
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

// --- The comparison's classification (compare_outputs with tie rows) ---

namespace {

// ref: [6, 4] of 1.0; cand equal except at the given (row, col) elements, which are off by 1.
OutputSet pair_side(bool candidate, const std::vector<std::pair<int, int>>& bad) {
    Tensor t = Tensor::zeros(DType::F32, {6, 4});
    float* v = t.mutable_data_as<float>();
    for (int i = 0; i < 24; ++i)
        v[i] = 1.0f;
    if (candidate)
        for (const auto& [row, col] : bad)
            v[row * 4 + col] = 2.0f;
    OutputSet set;
    set.add("output", std::move(t));
    set.add("output_1", Tensor::zeros(DType::F32, {})); // a leaf without tie rows
    return set;
}

OutputComparison compare_with(const std::vector<std::pair<int, int>>& bad, const TieRowsByOutput& ties) {
    return compare_outputs(pair_side(false, bad), pair_side(true, bad), CompareOptions{}, ties);
}

const TieRowsByOutput kTies = {
    {"output", {{1, 3, 4}, "top-2 of the bf16 router softmax: 2nd and 3rd equal"}}};

} // namespace

TEST(TieClassification, AllMismatchesInTieRowsIsTieExplainedAndStillFails) {
    const OutputComparison c = compare_with({{1, 0}, {1, 3}, {4, 2}}, kTies);
    EXPECT_FALSE(c.pass);
    const TensorComparison& out = c.tensors.at(0);
    EXPECT_FALSE(out.pass);
    EXPECT_EQ(out.mismatch_count, 3);
    ASSERT_TRUE(out.ties);
    EXPECT_TRUE(out.ties->classified);
    EXPECT_TRUE(out.ties->explained());
    EXPECT_EQ(out.ties->mismatched_elements, 3);
    EXPECT_EQ(out.ties->mismatched_elements_in_tie_rows, 3);
    EXPECT_EQ(out.ties->mismatched_rows_in_tie_rows, 2);
    EXPECT_EQ(out.ties->mismatched_rows_outside, 0);
    EXPECT_EQ(out.ties->named.rows, (std::vector<std::int64_t>{1, 3, 4}));
    const std::string text =
        "tie-explained: all 3 mismatched elements are in 2 of the 3 tie rows (top-2 of the bf16 router "
        "softmax: 2nd and 3rd equal)";
    EXPECT_EQ(tie_report_text(*out.ties), text);
    // The message (and so the rank's first error) says why, after PKB's text.
    EXPECT_NE(out.message.find("tensors not allclose"), std::string::npos) << out.message;
    EXPECT_NE(out.message.find("; " + text), std::string::npos) << out.message;
    EXPECT_NE(c.first_error.find(text), std::string::npos) << c.first_error;
    EXPECT_FALSE(c.tensors.at(1).ties); // output_1 has no tie rows
}

TEST(TieClassification, SomeMismatchesOutsideGiveRowCounts) {
    const OutputComparison c = compare_with({{1, 0}, {0, 1}, {2, 2}, {2, 3}, {5, 0}}, kTies);
    const TensorComparison& out = c.tensors.at(0);
    ASSERT_TRUE(out.ties);
    EXPECT_TRUE(out.ties->classified);
    EXPECT_FALSE(out.ties->explained());
    EXPECT_EQ(out.ties->mismatched_elements, 5);
    EXPECT_EQ(out.ties->mismatched_elements_in_tie_rows, 1);
    EXPECT_EQ(out.ties->mismatched_rows_in_tie_rows, 1);
    EXPECT_EQ(out.ties->mismatched_rows_outside, 3);
    EXPECT_EQ(tie_report_text(*out.ties),
              "not tie-explained: 3 mismatched rows are outside the 3 tie rows, 1 inside (top-2 of the bf16 "
              "router softmax: 2nd and 3rd equal)");
    EXPECT_NE(out.message.find("not tie-explained"), std::string::npos) << out.message;

    const TensorComparison none_inside = compare_with({{0, 1}}, kTies).tensors.at(0);
    EXPECT_EQ(tie_report_text(*none_inside.ties),
              "not tie-explained: 1 mismatched row is outside the 3 tie rows, 0 inside (top-2 of the bf16 "
              "router softmax: 2nd and 3rd equal)");
}

TEST(TieClassification, NoTieRowsLeavesTheComparisonAsItWas) {
    const OutputComparison with = compare_with({{1, 0}}, {});
    const TensorComparison& out = with.tensors.at(0);
    EXPECT_FALSE(out.ties);
    EXPECT_EQ(out.message.find("tie"), std::string::npos) << out.message;
    // A passing output keeps its tie rows (the GUI marks them) but is not classified.
    const TensorComparison passing = compare_with({}, kTies).tensors.at(0);
    EXPECT_TRUE(passing.pass);
    ASSERT_TRUE(passing.ties);
    EXPECT_FALSE(passing.ties->classified);
    EXPECT_FALSE(passing.ties->explained());
    EXPECT_EQ(tie_report_text(*passing.ties), "");
    EXPECT_EQ(passing.message, "");
}

TEST(TieClassification, ShapeMismatchAndZeroDimOutputs) {
    OutputSet ref = pair_side(false, {}), cand = pair_side(true, {});
    cand.tensors[0].tensor = Tensor::zeros(DType::F32, {5, 4});
    const TensorComparison shape = compare_outputs(ref, cand, CompareOptions{}, kTies).tensors.at(0);
    ASSERT_TRUE(shape.ties);
    EXPECT_FALSE(shape.ties->classified); // no element-wise verdict to classify
    EXPECT_EQ(shape.message.find("tie"), std::string::npos) << shape.message;

    // A 0-dim output (a loss a tie can move) has one row, 0.
    OutputSet a = pair_side(false, {}), b = pair_side(false, {});
    b.tensors[1].tensor.mutable_data_as<float>()[0] = 1.0f;
    const TensorComparison scalar =
        compare_outputs(a, b, CompareOptions{}, {{"output_1", {{0}, "top-2 ties move a count"}}})
            .tensors.at(1);
    ASSERT_TRUE(scalar.ties);
    EXPECT_TRUE(scalar.ties->explained());
    EXPECT_EQ(tie_report_text(*scalar.ties),
              "tie-explained: the 1 mismatched element is in 1 of the 1 tie row (top-2 ties move a count)");
}

TEST(TieClassification, RowsOfHigherRankOutputsAreDimZeroSlices) {
    // [3, 2, 2]: row r is the 4 elements whose dim-0 index is r; ties name row 2.
    Tensor r = Tensor::zeros(DType::F32, {3, 2, 2}), c = Tensor::zeros(DType::F32, {3, 2, 2});
    c.mutable_data_as<float>()[8] = 5.0f;  // (2, 0, 0)
    c.mutable_data_as<float>()[11] = 5.0f; // (2, 1, 1)
    const TieRows ties{{2}, "rule"};
    const TensorComparison out = compare_tensors(r, c, CompareOptions{}, "output", &ties);
    ASSERT_TRUE(out.ties);
    EXPECT_TRUE(out.ties->explained());
    EXPECT_EQ(out.ties->mismatched_rows_in_tie_rows, 1);
    c.mutable_data_as<float>()[7] = 5.0f; // (1, 1, 1): outside
    const TensorComparison out2 = compare_tensors(r, c, CompareOptions{}, "output", &ties);
    EXPECT_FALSE(out2.ties->explained());
    EXPECT_EQ(out2.ties->mismatched_rows_outside, 1);
    EXPECT_EQ(out2.ties->mismatched_elements_in_tie_rows, 2);
}
