// PKB problem 18: RMSNorm over a hidden dimension sharded across ranks.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

class TpRmsNorm final : public BasicProblem {
public:
    TpRmsNorm()
        : BasicProblem({.id = 18,
                        .stem = "18_tp_rms_norm",
                        .category = "FCC",
                        .title = "Tensor-parallel RMSNorm",
                        .description =
                            "Rank r holds hidden-state columns [M, N] and its weight shard [N] of a "
                            "hidden size W*N. The fp32 sum of squares of each row is all-reduced; "
                            "every rank returns weight * (h * rsqrt(sum/(W*N) + eps)) in the dtype "
                            "(param `variance_epsilon`, 1e-5), shape [M, N]."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"local_hidden_states", c.dtype, {c.m, c.n}}, {"local_weight", c.dtype, {c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"variance_epsilon", 1e-5}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = static_cast<double>(c.m) * 4,
                .flops = 4.0 * mn(c),
                .memory_bytes = 2.0 * mn(c) * e + static_cast<double>(c.n) * e};
    }
};

} // namespace

const Problem& problem_18() {
    static const TpRmsNorm problem;
    return problem;
}

} // namespace pkbw::problems
