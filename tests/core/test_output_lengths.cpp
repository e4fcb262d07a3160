// Variable-length outputs in the comparison (docs/comparison.md "Variable-length outputs"): the length
// rule runs before the element rule, names both lengths, and only the valid prefixes are compared.
#include "pkbw/core/compare.h"
#include "pkbw/core/protocol.h"

#include <gtest/gtest.h>

using namespace pkbw;

namespace {

// The valid prefix of a [rows, 2] f32 output: row r holds (r, -r).
Tensor prefix(std::int64_t rows, float shift = 0.0f) {
    Tensor t = Tensor::zeros(DType::F32, {rows, 2});
    float* v = t.mutable_data_as<float>();
    for (std::int64_t r = 0; r < rows; ++r) {
        v[2 * r] = static_cast<float>(r) + shift;
        v[2 * r + 1] = -static_cast<float>(r);
    }
    return t;
}

OutputComparison compare_lengths(std::int64_t ref_rows, std::int64_t cand_reported, std::int64_t bound,
                                 float shift = 0.0f) {
    OutputSet ref, cand;
    ref.add("output_0", prefix(ref_rows), OutputLength{bound, ref_rows});
    const std::int64_t cand_rows = OutputLength{bound, cand_reported}.valid() ? cand_reported : 0;
    cand.add("output_0", prefix(cand_rows, shift), OutputLength{bound, cand_reported});
    return compare_outputs(ref, cand, CompareOptions{});
}

TEST(OutputLengths, DifferentLengthsFailNamingBoth) {
    const OutputComparison c = compare_lengths(1039, 1056, 4096);
    EXPECT_FALSE(c.pass);
    ASSERT_EQ(c.tensors.size(), 1u);
    const TensorComparison& t = c.tensors[0];
    EXPECT_FALSE(t.pass);
    EXPECT_EQ(t.message, "output_0: length 1056, the reference's 1039");
    EXPECT_EQ(c.first_error, t.message);
    EXPECT_EQ(t.length_bound, 4096);
    EXPECT_EQ(t.ref_length, 1039);
    EXPECT_EQ(t.cand_length, 1056);
    EXPECT_EQ(t.numel, 0); // no element was compared
}

TEST(OutputLengths, EqualLengthsCompareThePrefixOnly) {
    const OutputComparison same = compare_lengths(7, 7, 64);
    EXPECT_TRUE(same.pass) << same.first_error;
    EXPECT_EQ(same.tensors[0].numel, 14);
    EXPECT_EQ(same.tensors[0].ref_length, 7);
    // A prefix that differs fails as any tensor does, with the element rule's message.
    const OutputComparison wrong = compare_lengths(7, 7, 64, 0.5f);
    EXPECT_FALSE(wrong.pass);
    EXPECT_EQ(wrong.tensors[0].mismatch_count, 7);
    EXPECT_EQ(wrong.tensors[0].cand_length, 7);
}

TEST(OutputLengths, EmptyOutputsOfEqualLengthPass) {
    const OutputComparison c = compare_lengths(0, 0, 16);
    EXPECT_TRUE(c.pass) << c.first_error;
    EXPECT_EQ(c.tensors[0].ref_length, 0);
}

TEST(OutputLengths, ALengthOutsideTheBoundOrNoneIsNamed) {
    const OutputComparison over = compare_lengths(5, 17, 16);
    EXPECT_FALSE(over.pass);
    EXPECT_EQ(over.tensors[0].message,
              "output_0: the candidate reported length 17, outside 0..16 (the output's bound)");
    const OutputComparison none = compare_lengths(5, kLengthNotReported, 16);
    EXPECT_FALSE(none.pass);
    EXPECT_EQ(none.tensors[0].message, "output_0: the candidate reported no length (bound 16)");
    const OutputComparison negative = compare_lengths(5, -9, 16);
    EXPECT_NE(negative.tensors[0].message.find("reported length -9"), std::string::npos);
}

TEST(OutputLengths, VariableOnOneSideOnlyFails) {
    OutputSet ref, cand;
    ref.add("output_0", prefix(3), OutputLength{8, 3});
    cand.add("output_0", prefix(3));
    const OutputComparison c = compare_outputs(ref, cand, CompareOptions{});
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.first_error, "output_0: variable length on one side only (the reference)");
}

TEST(OutputLengths, FixedOutputsBesideVariableOnesKeepTheirRule) {
    OutputSet ref, cand;
    ref.add("output_0", prefix(3), OutputLength{8, 3});
    cand.add("output_0", prefix(3), OutputLength{8, 3});
    ref.add("output_1", prefix(4));
    cand.add("output_1", prefix(5));
    const OutputComparison c = compare_outputs(ref, cand, CompareOptions{});
    EXPECT_FALSE(c.pass);
    EXPECT_TRUE(c.tensors[0].pass);
    EXPECT_FALSE(c.tensors[1].length_bound);
    EXPECT_EQ(c.tensors[1].message, "output_1: tensor shape ref [4, 2] vs cand [5, 2]");
}

TEST(OutputLengths, TheProtocolCarriesTheLengths) {
    const TensorComparison t = compare_lengths(1039, 1056, 4096).tensors[0];
    const TensorComparison back = protocol::tensor_comparison_from_json(protocol::to_json(t, false), "test");
    EXPECT_EQ(back.length_bound, 4096);
    EXPECT_EQ(back.ref_length, 1039);
    EXPECT_EQ(back.cand_length, 1056);
    EXPECT_EQ(back.message, t.message);
    OutputSet a;
    a.add("x", prefix(2));
    const TensorComparison plain = compare_outputs(a, a, CompareOptions{}).tensors[0];
    const auto json = protocol::to_json(plain, false);
    EXPECT_FALSE(json.contains("length_bound"));
    EXPECT_FALSE(protocol::tensor_comparison_from_json(json, "test").length_bound);
}

} // namespace
