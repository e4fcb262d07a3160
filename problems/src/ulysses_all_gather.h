// The descriptor of PKB 34 and 35, Ulysses' two all-gather primitives along dimension 0: every rank
// holds x [M, N] (standard normal; exact mode: amplitude for one term) and returns [W·M, N], rank r's
// x at rows r·M.. (34: all_gather_into_tensor; 35: the shapes all-gathered first, then the tensors,
// concatenated on gather_dim 0, a param). The values are the same; only PKB's path differs.
#pragma once

#include "problem_util.h"

#include <map>
#include <string>
#include <utility>

namespace pkbw::problems {

class UlyssesAllGatherProblem final : public BasicProblem {
public:
    UlyssesAllGatherProblem(ProblemInfo info, std::map<std::string, double> params)
        : BasicProblem(std::move(info))
        , params_(std::move(params)) {}

    std::vector<TensorSpec> input_specs(const ProblemConfig& c, int) const override {
        return {{"x", c.dtype, {c.m, c.n}}};
    }
    std::vector<TensorSpec> output_specs(const ProblemConfig& c, int) const override {
        return {{"output", c.dtype, {c.world_size * c.m, c.n}}};
    }
    void make_inputs(const ProblemConfig& c, int rank, std::vector<Tensor>& inputs) const override {
        fill_random_inputs(c, info().id, rank, inputs, exact_amplitude(c.dtype, 1));
    }
    std::map<std::string, double> params(const ProblemConfig&) const override { return params_; }
    WorkModel work(const ProblemConfig& c) const override { return all_gather_work(c); }

private:
    std::map<std::string, double> params_;
};

} // namespace pkbw::problems
