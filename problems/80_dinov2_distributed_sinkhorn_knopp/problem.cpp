// PKB problem 80: DINOv2's distributed Sinkhorn-Knopp centering of teacher outputs.
#include "problem_util.h"

#include <algorithm>

namespace pkbw::problems {
namespace {

constexpr std::int64_t kPrototypes = 16384;

// PKB's local batch: clamp(M, 512, 1024).
std::int64_t local_batch(const ProblemConfig& c) {
    return std::max<std::int64_t>(512, std::min<std::int64_t>(c.m, 1024));
}

class SinkhornKnopp final : public BasicProblem {
public:
    SinkhornKnopp()
        : BasicProblem({.id = 80,
                        .stem = "80_dinov2_distributed_sinkhorn_knopp",
                        .category = "DOM",
                        .title = "Distributed Sinkhorn-Knopp",
                        .description =
                            "Rank r holds fp32 teacher outputs [B, 16384] (B = clamp(M, 512, 1024)) and its "
                            "sample count. Q = exp(t / teacher_temp)ᵀ is divided by its global mass, then "
                            "3 times: rows (prototypes) divided by their all-reduced sums and by 16384, "
                            "columns (samples) by their local sums and by the global batch; finally "
                            "multiplied by the global batch and returned transposed, fp32 [B, 16384]. "
                            "All fp32 whatever the dtype; params teacher_temp = 0.07, n_iterations = 3."}) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"teacher_output", DType::F32, {local_batch(c), kPrototypes}},
                {"n_masked_patches_tensor", DType::I64, {1}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", DType::F32, {local_batch(c), kPrototypes}}};
    }
    // 0.01 · randn per rank (PKB seeds per rank). Exp and division make no sum exact, so exact mode
    // draws the same distribution.
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_normal(inputs[0], input_rng(c, info().id, rank, 0), 0.01);
        fill_constant(inputs[1], static_cast<double>(local_batch(c)));
    }
    std::map<std::string, double> params(const ProblemConfig&) const override {
        return {{"teacher_temp", 0.07}, {"n_iterations", 3}};
    }
    WorkModel work(const ProblemConfig& c) const override {
        const double elems = static_cast<double>(local_batch(c) * kPrototypes);
        return {.collective = CollectiveKind::AllReduce,
                .collective_bytes = 3.0 * kPrototypes * 4 + 8,
                .flops = 16.0 * elems,
                .memory_bytes = 2.0 * elems * 4};
    }
};

} // namespace

const Problem& problem_80() {
    static const SinkhornKnopp problem;
    return problem;
}

} // namespace pkbw::problems
