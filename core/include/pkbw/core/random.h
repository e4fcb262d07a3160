// Deterministic, counter-based random numbers for problem inputs: the value at index i depends only
// on (seed, stream, i), so inputs are identical on every backend and can be generated in any order
// or in parallel. Not PyTorch's Philox stream: PKB's exact tensors cannot be reproduced outside
// torch (docs/problems.md); the distributions are kept instead.
#pragma once

#include <cstdint>

namespace pkbw {

// The seed PKB uses for (problem, rank, trial): 42 + pid*1000 + rank + trial*1_000_003, with
// `base` in place of 42.
std::uint64_t pkb_seed(std::uint64_t base, int problem_id, int rank, int trial);

class CounterRng {
public:
    CounterRng(std::uint64_t seed, std::uint64_t stream = 0);
    std::uint64_t bits(std::uint64_t index) const; // 64 random bits
    double uniform(std::uint64_t index) const;     // [0, 1)
    double uniform(std::uint64_t index, double lo, double hi) const;
    double normal(std::uint64_t index) const; // standard normal (Box-Muller on two draws)
    // The two uniforms normal(index) is made of: normal(index) = sqrt(-2 log u1) cos(2 pi u2), u1 in
    // (0, 1], u2 in [0, 1). For bulk fills that must give normal()'s values by a faster route.
    struct NormalUniforms {
        double u1, u2;
    };
    NormalUniforms normal_uniforms(std::uint64_t index) const;
    std::int64_t integer(std::uint64_t index, std::int64_t lo, std::int64_t hi) const; // [lo, hi)

private:
    // The stream's key and the normal sub-stream's, mixed once: bits(i) is one mix of key + i (timed
    // inputs draw gigabytes of them).
    std::uint64_t key_;
    std::uint64_t normal_key_;
};

} // namespace pkbw
