// The descriptor of PKB 11 and 12, which differ only in how PKB's reference reaches the product:
// A_local [M, 512/W] (rank r's K-shard of A) and the rank's own B [512, N] in, A @ B_r [M, N] out,
// both drawn standard normal per rank (exact mode: amplitude 8, so the fp32 accumulation is exact).
#pragma once

#include "problem_util.h"

#include <string>

namespace pkbw::problems {

class AllGatherGemmProblem final : public BasicProblem {
public:
    static constexpr std::int64_t kK = 512; // PKB's fixed inner dimension

    using BasicProblem::BasicProblem;

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
        fill_random_inputs(c, info().id, rank, inputs);
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

} // namespace pkbw::problems
