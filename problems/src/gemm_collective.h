// The descriptor of PKB 13, 14 and 16: every rank multiplies its own A_r [M, k] by B_r [k, n] (K = 512
// overall), then one collective combines the products, each rounded to the dtype first:
//   13 (AllReduce):     A_local [M, 512], B_local [512, N]; the sum over ranks, [M, N].
//   14 (AllGather):     A [M, 512], B [512, N/W] (a column shard); the products side by side, [M, N].
//   16 (ReduceScatter): A_local [M, 512/W], B_local [512/W, N] (K-shards); row block r of the sum,
//                       [M/W, N].
// Inputs are standard normal per rank (exact mode: amplitude 8, so fp32 accumulation is exact).
#pragma once

#include "problem_util.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pkbw::problems {

class GemmCollectiveProblem final : public BasicProblem {
public:
    static constexpr std::int64_t kK = 512; // PKB's fixed inner dimension

    GemmCollectiveProblem(ProblemInfo info, CollectiveKind collective)
        : BasicProblem(std::move(info))
        , collective_(collective) {}

    std::optional<std::string> check_config(const ProblemConfig& c) const override {
        if (auto why = check_common(c, info())) {
            return why;
        }
        if (collective_ == CollectiveKind::AllGather) {
            return require_divides(info(), c.world_size, "W", c.n, "N");
        }
        if (collective_ == CollectiveKind::ReduceScatter) {
            if (auto why = require_divides(info(), c.world_size, "W", kK, "K")) {
                return why;
            }
            return require_divides(info(), c.world_size, "W", c.m, "M");
        }
        return std::nullopt;
    }
    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        const Local l = local(c);
        const char* suffix = collective_ == CollectiveKind::AllGather ? "" : "_local"; // PKB's names
        return {{std::string("A") + suffix, c.dtype, {c.m, l.k}},
                {std::string("B") + suffix, c.dtype, {l.k, l.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {local(c).out_rows, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs);
    }
    // The rank's GEMM, then W - 1 additions per output element for the two reductions; inputs read and
    // the output written once. S is the full product's bytes.
    WorkModel work(const ProblemConfig& c) const override {
        const Local l = local(c);
        const double e = elem_bytes(c);
        const double out = static_cast<double>(l.out_rows * c.n);
        const double adds = collective_ == CollectiveKind::AllGather ? 0.0 : out * (c.world_size - 1);
        return {.collective = collective_,
                .collective_bytes = mn(c) * e,
                .flops = 2.0 * static_cast<double>(c.m * l.n * l.k) + adds,
                .memory_bytes = static_cast<double>(c.m * l.k + l.k * l.n) * e + out * e};
    }

private:
    struct Local {
        std::int64_t k, n, out_rows; // the rank's inner and column extents, its output's rows
    };
    Local local(const ProblemConfig& c) const {
        switch (collective_) {
        case CollectiveKind::AllGather:
            return {kK, c.n / c.world_size, c.m};
        case CollectiveKind::ReduceScatter:
            return {kK / c.world_size, c.n, c.m / c.world_size};
        default:
            return {kK, c.n, c.m};
        }
    }

    CollectiveKind collective_;
};

} // namespace pkbw::problems
