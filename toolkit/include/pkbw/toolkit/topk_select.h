// Exactly-k selection over a short row (a router's top-k over E experts: torch.topk's indices), host and
// device, with the tie rule of topk_rule.h carried over to a selection of exactly k.
//
// topk_rule.h orders a row by (value, index), a strict total order: the stable sort. Its top-k *mask*
// keeps every element >= the k-th largest, so a tie at the boundary keeps more than k. A router cannot:
// torch.topk returns exactly k indices, and one_hot of them counts each once. The selection here is the
// first k of the stable *descending* sort (torch.sort(descending=True, stable=True)[1][:k]): larger
// values first, and among equal values the lower index first. So at a tie between the k-th and the
// (k+1)-th largest, the lower index is selected.
//
// Why that side: PyTorch's CUDA topk for short rows (TensorTopK.cu, gatherTopK) finds the k-th value by
// radix select, writes every strictly larger element, then fills the remaining slots with the elements
// equal to it in index order, so the lower index wins as here (our reading of its source; torch
// documents no tie order, and its CPU topk, a partial sort, may pick either). The order of the k
// selected among themselves is the descending one (sorted=True), equal values by index.
//
// NaN is not handled (softmax probabilities of finite logits are never NaN).
//
//     int experts[2];
//     pkbw::tk::top_k_select(probs_row, 8, 2, experts);          // probs in the problem's dtype
//     bool tie = pkbw::tk::top_k_boundary_tie(probs_row, 8, 2);  // k-th == (k+1)-th: the choice is a tie
#pragma once

#include "pkbw/toolkit/topk_rule.h"

#if defined(__CUDACC__)
#define PKBW_TK_SELECT_HD __host__ __device__ __forceinline__
#else
#define PKBW_TK_SELECT_HD inline
#endif

namespace pkbw::tk {

// The largest k top_k_boundary_tie handles (its selection lives on the stack).
inline constexpr int kMaxSelect = 64;

// True when element (a, ia) comes before (b, ib) in the selection order: larger value, then lower index.
template <class V>
PKBW_TK_SELECT_HD bool selects_before(V a, int ia, V b, int ib) {
    return a > b || (a == b && ia < ib);
}

// The indices of the k largest of values[0..n) (k <= n), in selection order, into out[0..k). Insertion
// into a sorted prefix: O(n·k), meant for rows of a few experts (E = 8, k = 2), one thread per row.
template <class V>
PKBW_TK_SELECT_HD void top_k_select(const V* values, int n, int k, int* out) {
    int filled = 0;
    for (int i = 0; i < n; ++i) {
        int pos = filled < k ? filled : k;
        while (pos > 0 && selects_before(values[i], i, values[out[pos - 1]], out[pos - 1])) {
            --pos;
        }
        if (pos >= k) {
            continue;
        }
        const int last = filled < k ? filled : k - 1;
        for (int j = last; j > pos; --j) {
            out[j] = out[j - 1];
        }
        out[pos] = i;
        if (filled < k) {
            ++filled;
        }
    }
}

// True when the k-th and (k+1)-th largest of values[0..n) are equal (0 < k < n, k <= kMaxSelect; false
// otherwise): which of the tied elements top_k_select picks is then decided by the tie rule alone, and
// another rule (PKB's CPU topk) may pick the other. Ties inside the top k (1st == 2nd) do not change the
// selected set, so they do not count.
template <class V>
PKBW_TK_SELECT_HD bool top_k_boundary_tie(const V* values, int n, int k) {
    if (k <= 0 || k >= n || k > kMaxSelect) {
        return false;
    }
    int selected[kMaxSelect] = {};
    top_k_select(values, n, k, selected);
    const V kth = values[selected[k - 1]]; // the smallest selected value
    int at_least = 0;                      // the k selected, plus any unselected element equal to kth
    for (int i = 0; i < n; ++i) {
        at_least += values[i] >= kth ? 1 : 0;
    }
    return at_least > k;
}

} // namespace pkbw::tk
