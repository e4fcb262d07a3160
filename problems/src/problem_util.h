// Helpers shared by the problem descriptors: a Problem with a fixed ProblemInfo, shape and work
// arithmetic, and the input generators (PKB constants, normal draws, exact-sum values).
#pragma once

#include "pkbw/core/dtype.h"
#include "pkbw/core/problem.h"
#include "pkbw/core/random.h"
#include "pkbw/core/tensor.h"

#include <optional>
#include <string>
#include <vector>

namespace pkbw::problems {

// Defined in the file CMake generates from the problem folders.
std::vector<const Problem*> generated_problems();

// The world sizes every problem accepts: 1..64 ranks (the ABI's kMaxRanks), positive M and N, a
// floating dtype. Problems add their own divisibility rules on top.
std::optional<std::string> check_common(const ProblemConfig& config, const ProblemInfo& info);

class BasicProblem : public Problem {
public:
    explicit BasicProblem(ProblemInfo info)
        : info_(std::move(info)) {}
    const ProblemInfo& info() const override { return info_; }
    std::optional<std::string> check_config(const ProblemConfig& config) const override {
        return check_common(config, info_);
    }

private:
    ProblemInfo info_;
};

inline double elem_bytes(const ProblemConfig& config) {
    return static_cast<double>(dtype_size(config.dtype));
}
inline double mn(const ProblemConfig& config) {
    return static_cast<double>(config.m * config.n);
}

// The work of an all-gather of every rank's [M, N] (2, 34, 35): nccl-tests' S is the gathered W·M·N
// elements; no FLOPs; the input read once and the gathered output written once.
WorkModel all_gather_work(const ProblemConfig& config);

// The generator for input `tensor_index` of `rank`: PKB's per-(problem, rank, trial) seed, with the
// tensor index as the counter stream so that each input tensor is an independent sequence.
CounterRng input_rng(const ProblemConfig& config, int problem_id, int rank, int tensor_index);

void fill_constant(Tensor& tensor, double value);
void fill_normal(Tensor& tensor, const CounterRng& rng, double scale = 1.0);
void fill_uniform(Tensor& tensor, const CounterRng& rng, double lo, double hi);
// Uniform integers in [lo, hi) stored in the tensor's dtype (indices, labels).
void fill_integers(Tensor& tensor, const CounterRng& rng, std::int64_t lo, std::int64_t hi);

// Element i of the tensor = values[i] (rounded to its dtype): structured inputs computed on the host
// (moe_inputs.h's masks, maps and index lists). values must have numel() entries.
void fill_values(Tensor& tensor, const std::vector<double>& values);
template <class T>
void fill_values(Tensor& tensor, const std::vector<T>& values) {
    fill_values(tensor, std::vector<double>(values.begin(), values.end()));
}

// Exact mode. Values are k * 2^-2 with k a uniform integer in [-a, a]. `a` is chosen so that any
// partial sum of `terms` such values is an integer multiple of 2^-2 below 2^p (p the significand
// precision of the dtype), hence exactly representable: the sum comes out bit-identical in every
// summation order (the idea of nccl-tests' verifiable inputs). a = min(8, 2^p / terms), at least 1.
int exact_amplitude(DType dtype, int terms);
void fill_exact(Tensor& tensor, const CounterRng& rng, int amplitude);

// The common case of random problems: input k is standard normal from stream k (`pkb`), or exact
// values of the given amplitude (`exact`).
void fill_random_inputs(const ProblemConfig& config, int problem_id, int rank, std::vector<Tensor>& inputs,
                        int exact_amplitude_value = 8);

// PKB's constant inputs of the collectives (1-4, 6, 7): rank r's tensor holds r + 1; exact mode draws
// exact values for a sum of `terms` (W where the collective sums, 1 where it only moves data).
void fill_rank_constant(const ProblemConfig& config, int problem_id, int rank, int terms, Tensor& tensor);

// An error message when `divisor` does not divide `value`, naming the problem and the quantity.
std::optional<std::string> require_divides(const ProblemInfo& info, std::int64_t divisor,
                                           const char* divisor_name, std::int64_t value,
                                           const char* value_name);

} // namespace pkbw::problems
