// Overlap suppression of binary masks (PKB 81, SAM3's _suppression_mask), one rule for the device and
// the host. Input: the pairwise intersections of n binary masks as pixel counts in fp32 ([n, n],
// row-major; the diagonal is each mask's area, which equals PKB's separate row sum because the masks
// are 0/1), and each object's last_occluded frame.
//
//   mask_iou(inter, area_i, area_j)   PKB's _mask_iou: inter / max(area_i + area_j - inter, 1) in fp32.
//                                     Counts below 2^24 are exact in fp32, so only the division rounds
//                                     (IEEE, as torch's), and the result does not depend on the order
//                                     in which the intersections were summed.
//   overlap_suppressed(k, ...)        whether object k is suppressed: some other object j overlaps it
//                                     (IoU >= threshold, compared in fp32 as torch compares a float
//                                     tensor with a Python float), k's last_occluded is later than j's
//                                     (earlier when reverse), and j's is > -1. PKB builds this from the
//                                     upper triangle twice (suppress_i by rows, suppress_j by columns);
//                                     both halves reduce to this one test on the unordered pair.
#pragma once

#ifdef __CUDACC__
#define PKBW_MASK_FN __host__ __device__ inline
#else
#define PKBW_MASK_FN inline
#endif

namespace pkbw::tk {

PKBW_MASK_FN float mask_iou(float inter, float area_i, float area_j) {
    const float uni = area_i + area_j - inter;
    return inter / (uni < 1.0f ? 1.0f : uni);
}

PKBW_MASK_FN bool overlap_suppressed(int k, int n, const float* inter, const long long* last_occluded,
                                     float threshold, bool reverse) {
    const long long mine = last_occluded[k];
    for (int j = 0; j < n; ++j) {
        if (j == k) {
            continue;
        }
        const int lo = k < j ? k : j, hi = k < j ? j : k; // torch.triu(..., diagonal=1): row < column
        const float iou = mask_iou(inter[lo * n + hi], inter[lo * n + lo], inter[hi * n + hi]);
        if (!(iou >= threshold)) {
            continue;
        }
        const long long other = last_occluded[j];
        const bool later = reverse ? mine < other : mine > other;
        if (later && other > -1) {
            return true;
        }
    }
    return false;
}

} // namespace pkbw::tk
