// PKB problem 13: local GEMM, then the partial products are summed across ranks.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kK = 512;

class GemmAllReduce final : public BasicProblem {
public:
    GemmAllReduce()
        : BasicProblem({.id = 13,
                        .stem = "13_gemm_allreduce",
                        .category = "FCC",
                        .title = "GEMM, then all-reduce of the products",
                        .description =
                            "Rank r holds A_r [M, 512] and B_r [512, N]; every rank returns the sum "
                            "over ranks of A_r @ B_r, shape [M, N]. Each product is rounded to the "
                            "dtype before the sum, as PKB's reference materialises it."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"A_local", c.dtype, {c.m, kK}}, {"B_local", c.dtype, {kK, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double e = elem_bytes(c);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = mn(c) * e,
                .flops = 2.0 * mn(c) * kK + mn(c) * (c.world_size - 1),
                .memory_bytes = static_cast<double>(c.m * kK + kK * c.n) * e + mn(c) * e};
    }
};

} // namespace

const Problem& problem_13() {
    static const GemmAllReduce problem;
    return problem;
}

} // namespace pkbw::problems
