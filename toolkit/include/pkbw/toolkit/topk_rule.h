// The top-k / top-p row filter of PKB 82-84 (`_apply_top_k_top_p`): its arguments and its rule, shared by
// topk.cuh (device) and topk_host.h (float64 oracle).
//
// The rule (also in docs/problems.md and the READMEs of problems 82-84):
//  - top-k (k > 0): keep every element >= the k-th largest value (k clamped to n). Ties at the
//    threshold are all kept, so more than k can survive; this mask does not depend on any sort order.
//  - top-p (p < 1): sort the row ascending, softmax over it (top-k's losers as -inf) rounded to the
//    dtype, running sum in index order with every prefix rounded to the dtype, keep the positions whose
//    prefix is > float(1 - p); the last (largest) position is always kept.
//  - Tie rule: the ascending order is the stable one (equal values keep their index order, lower index
//    first), i.e. torch.sort(stable=True). Tied values have equal probabilities, so the prefixes are the
//    same whatever the order; only which of the tied elements lands on each side of the top-p boundary
//    depends on it: here the higher index is kept. PKB calls torch.sort with stable=False, for which torch
//    documents no order of equal elements (our reading of its CUDA source: rows of <= 4096 are sorted in
//    shared memory, by a CUB block radix sort above 128 elements, which is stable and so agrees with
//    this rule; that is an implementation detail, not a promise).
//  - Filtered values are the input where kept and -inf elsewhere; keep is the mask (84's keep_mask).
//
// Rounding: the softmax is computed in double and rounded once to the dtype (torch computes it in fp32
// and rounds once); the running sum is double here, fp32 on the device (torch's CPU cumsum accumulates in
// fp32 and rounds each stored prefix; its CUDA scan may associate differently). These differ in the last
// place only, which moves the top-p boundary only for a prefix within an ulp of 1 - p.
#pragma once

namespace pkbw::tk {

// PKB's arguments: top_k <= 0 turns top-k off, top_p >= 1 turns top-p off.
struct TopKTopP {
    long long top_k = 0;
    double top_p = 1.0;
    bool need_k() const { return top_k > 0; }
    bool need_p() const { return top_p < 1.0; }
};

} // namespace pkbw::tk
