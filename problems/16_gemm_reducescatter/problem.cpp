// PKB problem 16: K-sharded GEMM partial products, reduce-scattered by rows.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kK = 512;

class GemmReduceScatter final : public BasicProblem {
public:
    GemmReduceScatter()
        : BasicProblem({.id = 16,
                        .stem = "16_gemm_reducescatter",
                        .category = "FCC",
                        .title = "K-sharded GEMM, then reduce-scatter by rows",
                        .description =
                            "Rank r holds A_r [M, 512/W] and B_r [512/W, N]; the partial products "
                            "A_r @ B_r (each rounded to the dtype) are summed across ranks and rank r "
                            "returns row block r of the sum, shape [M/W, N]. W must divide 512 and "
                            "M."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        if (auto why = require_divides(info(), c.world_size, "W", kK, "K")) {
            return why;
        }
        return require_divides(info(), c.world_size, "W", c.m, "M");
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const std::int64_t kl = kK / c.world_size;
        return {{"A_local", c.dtype, {c.m, kl}}, {"B_local", c.dtype, {kl, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m / c.world_size, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double e = elem_bytes(c);
        const double kl = static_cast<double>(kK) / c.world_size;
        return {.collective = CollectiveKind::ReduceScatter,
                .collective_bytes = mn(c) * e,
                .flops = 2.0 * mn(c) * kl + mn(c) * (c.world_size - 1) / c.world_size,
                .memory_bytes = (c.m * kl + kl * c.n) * e + mn(c) * e / c.world_size};
    }
};

} // namespace

const Problem& problem_16() {
    static const GemmReduceScatter problem;
    return problem;
}

} // namespace pkbw::problems
