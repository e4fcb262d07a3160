// PKB problem 12: gather a K-sharded A, then multiply by this rank's own B.
#include "problem_util.h"

namespace pkbw::problems {
namespace {

constexpr std::int64_t kK = 512; // PKB's fixed inner dimension

class AllGatherGemm final : public BasicProblem {
public:
    AllGatherGemm()
        : BasicProblem({.id = 12,
                        .stem = "12_allgather_gemm",
                        .category = "FCC",
                        .title = "All-gather A along K, then GEMM with the local B",
                        .description =
                            "Rank r holds A_local [M, 512/W] (columns r*512/W.. of a global A) and "
                            "its own B [512, N]. Every rank gathers A [M, 512] by concatenating the "
                            "shards along K and returns A @ B_r, shape [M, N]. B differs per rank "
                            "(PKB draws it per rank), so the outputs differ."}) {}

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

const Problem& problem_12() {
    static const AllGatherGemm problem;
    return problem;
}

} // namespace pkbw::problems
