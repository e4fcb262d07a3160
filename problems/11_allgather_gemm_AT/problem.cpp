// PKB problem 11: gather a K-sharded A through its transpose, then multiply by the local B.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kK = 512; // PKB's fixed inner dimension

class AllGatherGemmAT final : public BasicProblem {
public:
    AllGatherGemmAT()
        : BasicProblem({.id = 11,
                        .stem = "11_allgather_gemm_AT",
                        .category = "FCC",
                        .title = "All-gather A transposed, then GEMM with the local B",
                        .description =
                            "Rank r holds A_local [M, 512/W] (its K-shard of A) and its own B [512, N]. "
                            "PKB gathers the transposed shards into A^T [512, M], computes "
                            "C^T = B^T A^T and returns its transpose: every rank returns A @ B_r, "
                            "shape [M, N] (a non-contiguous view in PKB, contiguous here; the "
                            "compared values are the same)."}) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        if (kK % c.world_size != 0) {
            return info().stem + ": world size " + std::to_string(c.world_size) + " must divide K = 512";
        }
        return std::nullopt;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"A_local", c.dtype, {c.m, kK / c.world_size}}, {"B", c.dtype, {kK, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        for (std::size_t k = 0; k < inputs.size(); ++k) {
            const CounterRng rng = input_rng(c, info().id, rank, static_cast<int>(k));
            if (c.input_mode == InputMode::Exact) {
                fill_exact(inputs[k], rng, 8); // products sum exactly in f32: one rounding at the end
            } else {
                fill_normal(inputs[k], rng);
            }
        }
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double e = elem_bytes(c);
        const double a = static_cast<double>(c.m * kK) * e; // the gathered A
        return {.collective = CollectiveKind::AllGather,
                .collective_bytes = a,
                .flops = 2.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * kK,
                .memory_bytes = a / c.world_size + static_cast<double>(kK * c.n) * e + mn(c) * e};
    }
};

} // namespace

const Problem& problem_11() {
    static const AllGatherGemmAT problem;
    return problem;
}

} // namespace pkbw::problems
