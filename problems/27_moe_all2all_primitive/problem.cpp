// PKB problem 27: the MoE dispatch primitive, all_to_all_single of token rows with explicit split
// lists (PKB's are equal: M/W rows to and from every peer).
#include "pkbw/toolkit/moe_inputs.h"
#include "problem_util.h"

namespace pkbw::problems {
namespace {

// PKB's lists: M // W rows per peer, the remainder added to the last entry (input and output alike).
std::vector<double> split_list(const ProblemConfig& c) {
    const std::vector<long long> s = tk::equal_splits(c.m, c.world_size);
    return std::vector<double>(s.begin(), s.end());
}

class MoeAllToAllPrimitive final : public BasicProblem {
public:
    MoeAllToAllPrimitive()
        : BasicProblem({.id = 27,
                        .stem = "27_moe_all2all_primitive",
                        .category = "MoE",
                        .title = "MoE all-to-all primitive: token rows with split lists",
                        .description =
                            "Every rank holds local_tensor [M, N] (standard normal) and list params "
                            "input_split_sizes and output_split_sizes (M/W per peer). Rank r sends "
                            "rows of chunk p (by input_split_sizes) to rank p and returns the chunks "
                            "it receives, packed in source-rank order: [sum(output_split_sizes), N] "
                            "(all_to_all_single). W must divide M; W = 1 returns the input."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        // PKB adds M % W to the last split of both lists, so with a remainder rank W-1 would receive
        // more rows from each peer than it is sent: all_to_all_single refuses such lists.
        return c.world_size == 1 ? std::nullopt : require_divides(info(), c.world_size, "W", c.m, "M");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"local_tensor", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        // sum(output_split_sizes) rows, which is M.
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, 1));
    }
    std::map<std::string, double> params(const ProblemConfig& c) const override {
        std::map<std::string, double> params;
        add_list_param(params, "input_split_sizes", split_list(c));
        add_list_param(params, "output_split_sizes", split_list(c));
        return params;
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double bytes = mn(c) * elem_bytes(c);
        return {.collective = CollectiveKind::AllToAll,
                .collective_bytes = bytes,
                .flops = 0,
                .memory_bytes = 2 * bytes};
    }
};

} // namespace

const Problem& problem_27() {
    static const MoeAllToAllPrimitive problem;
    return problem;
}

} // namespace pkbw::problems
