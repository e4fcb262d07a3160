// The MoE router's top-k choice, shared by the device router (moe_router.cuh), the host oracle
// (moe_router_host.h) and the problems' tie detection, so that all three pick the same experts.
//
// PKB's router (problems 24, 31, 32, 49-51): probs = softmax(x·Wᵀ + b) in the dtype, then
// torch.topk(probs, k). The routing weights are the chosen probabilities as they are (no
// renormalisation).
//
// Tie rule: the k chosen experts are the first k of the row sorted by descending probability with the
// stable order of topk_rule.h (equal values keep their index order, lower index first), i.e.
// torch.sort(probs, descending=True, stable=True)[:k]. Among equal probabilities at the k-th place the
// lower expert index is chosen. PKB calls torch.topk, which documents no order for ties; its CUDA
// kernel (radix select, then "the first seen" of the values equal to the k-th) agrees with this rule as
// far as we read its source; its CPU kernel (partial sort on the value only) may pick either. Which
// expert wins a tie decides which rank's MLP processes the token, so a token whose k-th and (k+1)-th
// probabilities are equal is a *tie row* (router_is_tie_row): its output depends on the rule, unless the
// tied experts are all processed by the same rank (same owner: one MLP per rank, equal weights).
// A tie among probabilities that rounded to 0 is not a tie row: the expert it picks gets weight 0 and
// contributes nothing (0·y = 0 for finite y).
//
// NaN is not handled (torch ranks NaN first); the problems' inputs are finite.
#pragma once

#if defined(__CUDACC__)
#define PKBW_TK_MOE_HD __host__ __device__ __forceinline__
#else
#define PKBW_TK_MOE_HD inline
#endif

namespace pkbw::tk {

// The largest number of experts the router kernels take (PKB's problems use up to 2·W = 128).
inline constexpr int kMaxRouterExperts = 256;

// chosen[0..k) = the indices of the k largest of values[0..n) by the rule above, in descending order
// of value (ties: lower index first). Requires 1 <= k <= n.
template <class V>
PKBW_TK_MOE_HD void router_top_k(const V* values, int n, int k, int* chosen) {
    for (int s = 0; s < k; ++s) {
        int best = -1;
        for (int i = 0; i < n; ++i) {
            bool taken = false;
            for (int t = 0; t < s; ++t)
                taken = taken || chosen[t] == i;
            // Strict '>' while scanning upwards keeps the lower index among equal values.
            if (!taken && (best < 0 || values[i] > values[best]))
                best = i;
        }
        chosen[s] = best;
    }
}

// True when the token's output depends on the tie rule: the k-th largest of values[0..n) (k < n) is
// non-zero and equal to a value that was not chosen, and the experts holding that value do not all
// belong to one owner (expert e's owner is e / experts_per_owner: the EP rank that processes it).
// `chosen` is router_top_k's result. With experts_per_owner = 1 (the default) every such tie counts:
// the plain rule "k-th == (k+1)-th". Why the owner: the MoE problems apply one MLP per rank, so
// swapping two tied experts of the same rank changes neither the weights (equal) nor the rank that
// computes the token, hence no value.
template <class V>
PKBW_TK_MOE_HD bool router_is_tie_row(const V* values, int n, int k, const int* chosen,
                                      int experts_per_owner = 1) {
    if (k >= n || experts_per_owner < 1)
        return false;
    const V kth = values[chosen[k - 1]];
    if (kth == V(0))
        return false;
    bool unchosen_equal = false, mixed_owners = false;
    int owner = -1;
    for (int i = 0; i < n; ++i) {
        if (!(values[i] == kth))
            continue;
        bool taken = false;
        for (int t = 0; t < k; ++t)
            taken = taken || chosen[t] == i;
        unchosen_equal = unchosen_equal || !taken;
        const int o = i / experts_per_owner;
        mixed_owners = mixed_owners || (owner >= 0 && o != owner);
        owner = owner < 0 ? o : owner;
    }
    return unchosen_equal && mixed_owners;
}

} // namespace pkbw::tk
