// The test-only top-2 problem of the tie-explained mismatch tests (tie_problem.cpp).
#pragma once

namespace pkbw::test {

inline constexpr int kTieProblemId = 990;
inline constexpr const char* kTieProblemStem = "990_top2_ties_test";
// Its host reference, which the test writes to <data root>/problems/990_top2_ties_test/reference_host.cpp.
extern const char* const kTieReferenceSource;

} // namespace pkbw::test
