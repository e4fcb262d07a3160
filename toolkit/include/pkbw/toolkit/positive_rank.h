// PKB 69's ranking rule, one definition for the device reference, the host oracle and the descriptor's tie
// rows, so that all three count the same way.
//
// PKB: per row, scores = cat(pos, neg[0..n)); torch.sort(torch.sigmoid(scores), descending=True)
// (stable=False); the output is the 1-based position of column 0, the positive.
//
// Rule:
// - sigmoid in double, rounded once to the dtype D (round to nearest even; for bf16 and f16 through f32,
//   as every store does): the value PyTorch's sigmoid stores up to its own last-bit error (it computes
//   1 / (1 + exp(-x)) in f32, which can differ from the correctly rounded value by an f32 ulp, rarely a
//   bf16 one; that matters only where it makes or breaks a tie with the positive).
// - rank = 1 + the number of negatives whose rounded sigmoid is strictly greater than the positive's:
//   among equal values the positive comes first, i.e. a stable descending sort (lower index first, and
//   the positive is column 0). PKB sorts with stable=False, for which torch documents no order; its CUDA
//   kernel for rows of 129-4096 is a stable block radix sort as far as we read the source, which agrees
//   (topk_rule.h says the same for 82-84). torch's CPU sort may order ties otherwise.
// - A row is a tie row when some negative's rounded sigmoid equals the positive's: its rank depends on the
//   rule (any position from rank to rank + ties is some sort's answer). In bf16 the sigmoid of standard
//   normal scores takes a few hundred values, so ties are common; in f32 they are rare.
// NaN is not handled (the problem's inputs are finite).
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define PKBW_TK_RANK_HD __host__ __device__ __forceinline__
#else
#define PKBW_TK_RANK_HD inline
#endif

namespace pkbw::tk {

PKBW_TK_RANK_HD double sigmoid_f64(double x) {
    return 1.0 / (1.0 + ::exp(-x));
}

// 1 + how many of negatives[0..n) are strictly greater than positive (values already rounded to D).
template <class V>
PKBW_TK_RANK_HD long long positive_rank(V positive, const V* negatives, long long n) {
    long long greater = 0;
    for (long long j = 0; j < n; ++j) {
        greater += negatives[j] > positive ? 1 : 0;
    }
    return 1 + greater;
}

// How many of negatives[0..n) equal positive: a row with any is a tie row.
template <class V>
PKBW_TK_RANK_HD long long positive_ties(V positive, const V* negatives, long long n) {
    long long equal = 0;
    for (long long j = 0; j < n; ++j) {
        equal += negatives[j] == positive ? 1 : 0;
    }
    return equal;
}

} // namespace pkbw::tk
