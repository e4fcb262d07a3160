// Shapes, rules and params shared by PKB 28 (MoE token dispatch before the experts) and 29 (the combine
// after them): 8 experts whatever W, top-2, so 2M routed rows per rank, exchanged with
// all_to_all_single on even split lists.
#pragma once

#include "pkbw/toolkit/moe_inputs.h"
#include "problem_util.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::problems::moe_all2all {

constexpr int kExperts = 8; // PKB's num_experts, whatever W
constexpr int kTopK = 2;

// Rows after the permutation: every token goes to kTopK distinct experts.
inline std::int64_t routed(const ProblemConfig& c) {
    return kTopK * c.m;
}

// The rules and params both problems share: W divides the 8 experts (PKB asserts it) and the 2M
// routed rows; num_experts and input_splits = output_splits, the 2M rows split evenly over the ranks.
class MoeAllToAllProblem : public BasicProblem {
public:
    using BasicProblem::BasicProblem;

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        if (auto why = require_divides(info(), c.world_size, "W", kExperts, "num_experts")) {
            return why;
        }
        // PKB's even split lists put the remainder on the last entry of both lists, which only agree
        // between sender and receiver when W divides the 2M routed rows.
        return c.world_size == 1 ? std::nullopt : require_divides(info(), c.world_size, "W", routed(c), "2M");
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        const std::vector<long long> splits = tk::equal_splits(routed(c), c.world_size);
        const std::vector<double> values(splits.begin(), splits.end());
        std::map<std::string, double> params{{"num_experts", kExperts}};
        add_list_param(params, "input_splits", values);
        add_list_param(params, "output_splits", values);
        return params;
    }
};

} // namespace pkbw::problems::moe_all2all
