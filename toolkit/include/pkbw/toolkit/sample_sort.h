// Sample sort's host-side plan (pkbw reference toolkit), backend-neutral and free of the ABI, so that
// descriptors, references and oracles share it (PKB 85's distributed_sample_sort):
//
//   balanced_range(rank, W, total)      PKB's _target_range: rank r's slice of the global sort, the first
//                                       total % W ranks one longer. Fixes 85's output lengths.
//   regular_sample_positions(n, s)      PKB's _extract_samples: the positions of a rank's regular samples
//                                       in its sorted shard ((i + 1)·n / s - 1 when s < n, else 0..n-1).
//   choose_splitters(samples, active)   PKB's _gather_splitters: the gathered samples (rank -1 = none)
//                                       sorted by (value, sort rank, position), the (k + 1)·usable /
//                                       active - 1-th for k < active - 1.
//   split_boundaries(...)               PKB's _split_positions: where a sorted shard splits for each
//                                       splitter, from searchsorted left/right (a splitter of a higher
//                                       sort rank cuts before equal values, of a lower one after them,
//                                       its own rank's at its position + 1), kept monotone.
//   rebalance_counts(start, len, W, T)  PKB's _redistribute_exact: how many of a rank's merged bucket
//                                       [start, start + len) of the global order go to each rank's slice.
//
// The device steps (sort, searchsorted, the exchanges) are sort.cuh's, sample_sort.cuh's and
// alltoall.cuh's; the oracle needs none of this but balanced_range (a global sort is the answer).
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

namespace pkbw::tk {

struct IndexRange {
    long long begin = 0, end = 0;
    long long size() const { return end - begin; }
};

inline IndexRange balanced_range(long long rank, long long world, long long total) {
    const long long base = total / world, extra = total % world;
    const long long begin = rank * base + std::min(rank, extra);
    return {begin, begin + base + (rank < extra ? 1 : 0)};
}

inline std::vector<long long> regular_sample_positions(long long n, long long samples) {
    std::vector<long long> positions;
    for (long long i = 0; i < std::min(samples, n); ++i) {
        positions.push_back(samples < n ? (i + 1) * n / samples - 1 : i);
    }
    return positions;
}

// One regular sample: its value (exact as a double for every floating dtype), the sort rank of the shard
// it came from (its index among the ranks with elements; -1 = an empty slot) and its position there.
struct SortSample {
    double value = 0;
    long long rank = -1, position = -1;
};

inline std::vector<SortSample> choose_splitters(const std::vector<SortSample>& gathered, long long active) {
    std::vector<SortSample> samples;
    for (const SortSample& s : gathered) {
        if (s.rank >= 0) {
            samples.push_back(s);
        }
    }
    std::sort(samples.begin(), samples.end(), [](const SortSample& a, const SortSample& b) {
        return std::tie(a.value, a.rank, a.position) < std::tie(b.value, b.rank, b.position);
    });
    std::vector<SortSample> splitters;
    const long long usable = static_cast<long long>(samples.size());
    for (long long k = 0; k + 1 < active && usable > 0; ++k) {
        const long long index = std::clamp((k + 1) * usable / active - 1, 0LL, usable - 1);
        splitters.push_back(samples[static_cast<std::size_t>(index)]);
    }
    return splitters;
}

// Bucket b of this shard is [bounds[b], bounds[b + 1]); left[s] and right[s] are searchsorted of
// splitter s's value in the sorted shard of n elements. Empty (all zeros) for a rank without elements.
inline std::vector<long long> split_boundaries(const std::vector<SortSample>& splitters, long long sort_rank,
                                               long long n, const std::vector<long long>& left,
                                               const std::vector<long long>& right) {
    if (sort_rank < 0) {
        return std::vector<long long>(splitters.size() + 2, 0);
    }
    std::vector<long long> bounds{0};
    for (std::size_t s = 0; s < splitters.size(); ++s) {
        const long long end = sort_rank > splitters[s].rank   ? left[s]
                              : sort_rank < splitters[s].rank ? right[s]
                                                              : splitters[s].position + 1;
        bounds.push_back(std::max(bounds.back(), std::min(end, n)));
    }
    bounds.push_back(n);
    return bounds;
}

inline std::vector<long long> rebalance_counts(long long start, long long length, long long world,
                                               long long total) {
    std::vector<long long> counts;
    for (long long dest = 0; dest < world; ++dest) {
        const IndexRange target = balanced_range(dest, world, total);
        const long long begin = std::max(start, target.begin), end = std::min(start + length, target.end);
        counts.push_back(begin < end ? end - begin : 0);
    }
    return counts;
}

} // namespace pkbw::tk
