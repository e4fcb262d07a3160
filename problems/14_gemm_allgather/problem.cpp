// PKB problem 14: column-sharded GEMM outputs gathered side by side.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kK = 512;

class GemmAllGather final : public BasicProblem {
public:
    GemmAllGather()
        : BasicProblem({.id = 14,
                        .stem = "14_gemm_allgather",
                        .category = "FCC",
                        .title = "GEMM on a column shard, then all-gather along columns",
                        .description = "Rank r holds A_r [M, 512] and B_r [512, N/W]; every rank returns "
                                       "[A_0 B_0 | A_1 B_1 | ... ], the per-rank products concatenated along "
                                       "columns, shape [M, N]. W must divide N."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        return require_divides(info(), c.world_size, "W", c.n, "N");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"A", c.dtype, {c.m, kK}}, {"B", c.dtype, {kK, c.n / c.world_size}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = mn(c) * e,
                .flops = 2.0 * mn(c) * kK / c.world_size,
                .memory_bytes = static_cast<double>(c.m * kK + kK * c.n / c.world_size) * e + mn(c) * e};
    }
};

} // namespace

const Problem& problem_14() {
    static const GemmAllGather problem;
    return problem;
}

} // namespace pkbw::problems
