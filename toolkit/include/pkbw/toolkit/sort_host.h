// Sorting and counting on the host (pkbw reference toolkit): the host twins of sort.cuh's CUB layer,
// with the same results bit for bit, for the oracles of 64, 67-70, 79, 85.
//
// Rules, the same on both sides:
// - stable_argsort_by_key: equal keys keep their input order (torch.argsort(stable=True)).
// - histogram: counts of keys in [0, bins); a key outside is an error (returns false).
// - exclusive_scan: offsets[i] = sum of counts[0..i).
// - searchsorted: torch.searchsorted(sorted, value, right=right) (left: first index with sorted[i] >= v).
// - unique_first: the distinct keys in the order of their first occurrence, and each input's index
//   into that list (64's first-occurrence dedup).
// - segmented_topk: per segment of `width`, the k largest, ties broken by the lower index (the tie
//   rule; torch.topk on CUDA documents none).
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <unordered_map>
#include <vector>

namespace pkbw::tk {

template <class Key>
std::vector<long long> stable_argsort_by_key(const Key* keys, long long n) {
    std::vector<long long> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0LL);
    std::stable_sort(order.begin(), order.end(), [&](long long a, long long b) { return keys[a] < keys[b]; });
    return order;
}

template <class Key>
bool histogram(const Key* keys, long long n, int bins, std::vector<long long>& counts) {
    counts.assign(static_cast<std::size_t>(bins), 0);
    for (long long i = 0; i < n; ++i) {
        if (keys[i] < 0 || keys[i] >= bins) {
            return false;
        }
        ++counts[static_cast<std::size_t>(keys[i])];
    }
    return true;
}

inline std::vector<long long> exclusive_scan(const std::vector<long long>& counts) {
    std::vector<long long> offsets(counts.size(), 0);
    for (std::size_t i = 1; i < counts.size(); ++i) {
        offsets[i] = offsets[i - 1] + counts[i - 1];
    }
    return offsets;
}

template <class T>
long long searchsorted(const T* sorted, long long n, T value, bool right = false) {
    const T* at =
        right ? std::upper_bound(sorted, sorted + n, value) : std::lower_bound(sorted, sorted + n, value);
    return static_cast<long long>(at - sorted);
}

template <class Key>
std::vector<Key> unique_first(const Key* keys, long long n, std::vector<long long>* inverse = nullptr) {
    std::vector<Key> distinct;
    std::unordered_map<Key, long long> seen;
    if (inverse != nullptr) {
        inverse->resize(static_cast<std::size_t>(n));
    }
    for (long long i = 0; i < n; ++i) {
        const auto [it, fresh] = seen.emplace(keys[i], static_cast<long long>(distinct.size()));
        if (fresh) {
            distinct.push_back(keys[i]);
        }
        if (inverse != nullptr) {
            (*inverse)[static_cast<std::size_t>(i)] = it->second;
        }
    }
    return distinct;
}

// Indices (within the segment) of the k largest of each segment of `width` values, largest first;
// equal values: the lower index first.
template <class T>
std::vector<long long> segmented_topk(const T* values, long long segments, long long width, long long k) {
    std::vector<long long> out(static_cast<std::size_t>(segments * k));
    std::vector<long long> order(static_cast<std::size_t>(width));
    for (long long s = 0; s < segments; ++s) {
        const T* row = values + s * width;
        std::iota(order.begin(), order.end(), 0LL);
        std::stable_sort(order.begin(), order.end(),
                         [&](long long a, long long b) { return row[a] > row[b]; });
        std::copy_n(order.begin(), k, out.begin() + s * k);
    }
    return out;
}

// dst row t = src row rows[t] (rows of row_bytes); the host twin of gather.cuh's gather_rows.
inline void gather_rows_host(const void* src, std::size_t row_bytes, const std::vector<long long>& rows,
                             void* dst) {
    const auto* from = static_cast<const unsigned char*>(src);
    auto* to = static_cast<unsigned char*>(dst);
    for (std::size_t t = 0; t < rows.size(); ++t) {
        std::copy_n(from + static_cast<std::size_t>(rows[t]) * row_bytes, row_bytes, to + t * row_bytes);
    }
}

// dst row rows[t] += src row t (float rows of `width`), in t order: the host twin of scatter_add_rows.
inline void scatter_add_rows_host(const float* src, long long width, const std::vector<long long>& rows,
                                  float* dst) {
    for (std::size_t t = 0; t < rows.size(); ++t) {
        for (long long w = 0; w < width; ++w) {
            dst[rows[t] * width + w] += src[static_cast<long long>(t) * width + w];
        }
    }
}

} // namespace pkbw::tk
