// Helpers for the problem tests: build a rank's inputs, read values, round like a dtype.
#pragma once

#include "pkbw/core/dtype.h"
#include "pkbw/core/problem.h"
#include "pkbw/problems/registry.h"

#include <gtest/gtest.h>
#include <vector>

namespace pkbw::test {

inline const Problem& problem(const char* key) {
    const Problem* p = find_problem(key);
    if (p == nullptr) {
        throw std::runtime_error(std::string("no problem ") + key);
    }
    return *p;
}

inline ProblemConfig config(int world, std::int64_t m = 8, std::int64_t n = 16, DType dtype = DType::BF16,
                            InputMode mode = InputMode::Pkb) {
    ProblemConfig c;
    c.world_size = world;
    c.m = m;
    c.n = n;
    c.dtype = dtype;
    c.input_mode = mode;
    return c;
}

inline double round_to(DType dtype, double value) {
    std::byte buf[8];
    f64_to_element(dtype, value, buf);
    return element_to_f64(dtype, buf);
}

// Sums the same element of every rank's tensor, rounding to `dtype` after each addition, in the
// given rank order: what a ring or tree of narrow-precision adds would compute.
inline double rounded_sum(const std::vector<Tensor>& per_rank, std::int64_t i,
                          const std::vector<int>& order) {
    double acc = 0;
    for (int r : order) {
        acc = round_to(per_rank[r].dtype(), acc + per_rank[r].get_f64(i));
    }
    return acc;
}

inline bool all_equal(const Tensor& t, double value) {
    for (std::int64_t i = 0; i < t.numel(); ++i) {
        if (t.get_f64(i) != value) {
            return false;
        }
    }
    return true;
}

} // namespace pkbw::test
