// Fixed non-tensor output leaves (PKB's None, torch.Size, nested lists) from a problem's descriptor,
// and list-valued parameters in the scalar map.
#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"
#include "pkbw/core/problem.h"

#include <gtest/gtest.h>

using namespace pkbw;

namespace {

// PKB 25's shape: (loss, None, per-token [M], ...), here (loss, None, size).
class LeafProblem : public Problem {
public:
    std::map<std::string, std::string> values = {{"output_1", "null"}, {"output_2", "[4096, 8]"}};
    const ProblemInfo& info() const override {
        static const ProblemInfo i{999, "999_leaves", "TI", "leaves", "", 1e-2, 1e-2, false, true};
        return i;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig&, int) const override { return {}; }
    std::vector<TensorSpec> output_specs(const ProblemConfig&, int) const override {
        return {{"output_0", DType::F32, {}}};
    }
    void make_inputs(const ProblemConfig&, int, std::vector<Tensor>&) const override {}
    std::map<std::string, std::string> output_values(const ProblemConfig&, int) const override {
        return values;
    }
};

std::string error_of(const LeafProblem& p) {
    try {
        p.checked_output_values(ProblemConfig{}, 1);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST(ProblemValues, DefaultIsNoneAndLeavesAreChecked) {
    struct Plain : LeafProblem {
        std::map<std::string, std::string> output_values(const ProblemConfig&, int) const override {
            return {};
        }
    };
    EXPECT_TRUE(Plain{}.checked_output_values(ProblemConfig{}, 0).empty());

    LeafProblem p;
    EXPECT_EQ(p.checked_output_values(ProblemConfig{}, 0), p.values);
    p.values["output_0"] = "null";
    EXPECT_EQ(error_of(p), "999_leaves rank 1: output value 'output_0' is also a tensor output");
    p.values.erase("output_0");
    p.values["output_3"] = "[1, ";
    EXPECT_EQ(error_of(p), "999_leaves rank 1: output value 'output_3' is not JSON: [1, ");
}

// Both sides get the descriptor's leaves; a side whose leaf differs (a PKB solution returning a tensor
// or another size where the reference has None) fails the comparison, naming the leaf.
TEST(ProblemValues, ComparisonChecksTheLeaves) {
    LeafProblem p;
    OutputSet ref, cand;
    ref.add("output_0", Tensor::zeros(DType::F32, {}));
    cand.add("output_0", Tensor::zeros(DType::F32, {}));
    ref.values = cand.values = p.checked_output_values(ProblemConfig{}, 0);
    EXPECT_TRUE(compare_outputs(ref, cand, CompareOptions{}).pass);
    cand.values["output_2"] = "[4096, 4]";
    const OutputComparison bad = compare_outputs(ref, cand, CompareOptions{});
    EXPECT_FALSE(bad.pass);
    EXPECT_NE(bad.first_error.find("output_2: values differ"), std::string::npos) << bad.first_error;
}

TEST(ListParams, StoredAsIndexedScalarsAndReadBack) {
    std::map<std::string, double> params{{"root", 0}};
    add_list_param(params, "splits", {2, 0, 5});
    add_list_param(params, "none", {});
    EXPECT_EQ(params.at("splits[]"), 3);
    EXPECT_EQ(params.at("splits[2]"), 5);
    EXPECT_EQ(find_list_param(params, "splits"), (std::vector<double>{2, 0, 5}));
    EXPECT_EQ(find_list_param(params, "none"), std::vector<double>{});
    EXPECT_EQ(find_list_param(params, "root"), std::nullopt);
    params.erase("splits[1]");
    EXPECT_THROW(find_list_param(params, "splits"), Error);
}
