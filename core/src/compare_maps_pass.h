// Internal to the error-map pass (compare_maps.cpp, compare_maps_error.cpp): how a tensor's rows are
// read, how a map's rows are split between threads, the per-thread band buffers and the fold of a band
// into the map's cells, shared by pool_values and analyse_error.
#pragma once

#include "compare_maps_kernel.h"
#include "pkbw/core/compare_maps.h"
#include "pkbw/core/dtype.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace pkbw::maps::detail {

// How the kernel reads a tensor's row segments: straight from memory (contiguous f32 or bf16), or
// converted to f32 into a buffer first (every other dtype or layout).
enum class Access { F32, Bf16, Converted };

inline Access access_of(const Tensor& t) {
    if (t.is_contiguous() && t.dtype() == DType::F32) {
        return Access::F32;
    }
    if (t.is_contiguous() && t.dtype() == DType::BF16) {
        return Access::Bf16;
    }
    return Access::Converted;
}

// Converts `count` consecutive logical elements starting at `first` to f32.
inline void read_f32(const Tensor& t, std::int64_t first, std::int64_t count, float* out) {
    if (!t.is_contiguous()) {
        for (std::int64_t i = 0; i < count; ++i) {
            out[i] = t.get_f32(first + i);
        }
        return;
    }
    const std::size_t size = dtype_size(t.dtype());
    const std::byte* base = t.data() + static_cast<std::size_t>(first) * size;
    switch (t.dtype()) {
    case DType::F32:
        std::memcpy(out, base, static_cast<std::size_t>(count) * sizeof(float));
        return;
    case DType::BF16:
        for (std::int64_t i = 0; i < count; ++i) {
            std::uint16_t half;
            std::memcpy(&half, base + 2 * i, 2);
            const std::uint32_t bits = static_cast<std::uint32_t>(half) << 16;
            std::memcpy(out + i, &bits, 4);
        }
        return;
    case DType::F16:
        for (std::int64_t i = 0; i < count; ++i) {
            std::uint16_t half;
            std::memcpy(&half, base + 2 * i, 2);
            out[i] = f16_bits_to_f32(half);
        }
        return;
    default:
        for (std::int64_t i = 0; i < count; ++i) {
            out[i] = element_to_f32(t.dtype(), base + static_cast<std::size_t>(i) * size);
        }
        return;
    }
}

template <class T>
const T* typed(const Tensor& t, std::int64_t first) {
    return reinterpret_cast<const T*>(t.data()) + first;
}

inline PooledMap empty_map(const Tensor& t, int max_side) {
    const Grid2D g = grid_of(t.shape());
    PooledMap m;
    m.source_rows = g.rows;
    m.source_cols = g.cols;
    m.rows = static_cast<int>(std::min<std::int64_t>(g.rows, std::max(1, max_side)));
    m.cols = static_cast<int>(std::min<std::int64_t>(g.cols, std::max(1, max_side)));
    if (t.numel() == 0) {
        m.rows = m.cols = 0;
    }
    return m;
}

// First source index of each cell along one axis (cells + 1 entries): element i lies in cell
// i * cells / source, so cell k starts at ceil(k * source / cells).
inline std::vector<std::int64_t> cell_starts(std::int64_t source, int cells) {
    std::vector<std::int64_t> starts(static_cast<std::size_t>(cells) + 1);
    for (int k = 0; k <= cells; ++k) {
        starts[static_cast<std::size_t>(k)] = (static_cast<std::int64_t>(k) * source + cells - 1) / cells;
    }
    return starts;
}

// Splits the map's rows into bands, one per thread, so that no two threads write the same cell.
template <class Body>
void for_row_bands(const PooledMap& m, Body body) {
    const int threads = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1u, 8u));
    const std::int64_t elements = m.source_rows * m.source_cols;
    if (threads == 1 || elements < (1 << 20) || m.rows < threads) {
        body(0, m.rows, 0);
        return;
    }
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t) {
        const int begin = m.rows * t / threads, end = m.rows * (t + 1) / threads;
        pool.emplace_back([&body, begin, end, t] { body(begin, end, t); });
    }
}

// Per-thread buffers: the chunk's bands, its ratios and (for converted access) its f32 rows. Each
// array has kLanes of slack for the kernel's padded last vector.
struct Scratch {
    static constexpr std::size_t kStride = kChunk + kLanes;
    std::vector<float> memory = std::vector<float>(10 * kStride);
    std::vector<std::int32_t> counters = std::vector<std::int32_t>(kStride);
    float* at(int i) { return memory.data() + static_cast<std::size_t>(i) * kStride; }
    Band band() { return {at(0), at(1), at(2), at(3), at(4), at(8), at(9), counters.data()}; }
    float* ratio() { return at(5); }
    float* row_a() { return at(6); }
    float* row_b() { return at(7); }
    void reset_band(int n) {
        Band b = band();
        const std::size_t padded = static_cast<std::size_t>(n + kLanes);
        std::fill_n(b.ref_hi, padded, -kInf);
        std::fill_n(b.ref_lo, padded, kInf);
        std::fill_n(b.cand_hi, padded, -kInf);
        std::fill_n(b.cand_lo, padded, kInf);
        std::fill_n(b.ratio, padded, 0.0f);
        std::fill_n(b.diff_hi, padded, -kInf);
        std::fill_n(b.diff_lo, padded, kInf);
        std::fill_n(b.worst_row, padded, 0);
    }
};

// Folds band columns [c0, c0 + n) into the cells of one map row.
struct RowFold {
    const std::vector<std::int64_t>& starts; // cell_starts of the columns
    std::int64_t c0;
    int n;
    template <class Fn>
    void each_cell(Fn fn) const {
        const std::int64_t c1 = c0 + n;
        const auto first = std::upper_bound(starts.begin(), starts.end(), c0) - starts.begin() - 1;
        for (auto k = static_cast<std::size_t>(first); k + 1 < starts.size() && starts[k] < c1; ++k) {
            const std::int64_t lo = std::max(starts[k], c0), hi = std::min(starts[k + 1], c1);
            if (lo < hi) {
                fn(k, static_cast<int>(lo - c0), static_cast<int>(hi - lo));
            }
        }
    }
    void values(const float* hi, const float* lo, float* map_val, float* map_mag) const {
        each_cell([&](std::size_t k, int first, int count) {
            float m, v;
            reduce_values(hi + first, lo + first, count, m, v);
            if (m > map_mag[k] || (m == map_mag[k] && v > map_val[k])) {
                map_mag[k] = m;
                map_val[k] = v;
            }
        });
    }
    void maxima(const float* ratio, float* map_ratio) const {
        each_cell([&](std::size_t k, int lo, int count) {
            map_ratio[k] = max_of(ratio + lo, count, map_ratio[k]);
        });
    }
    // Failing elements of one row segment per cell, from its ratios (called only for a segment
    // that has some: mismatches are rare, and a per-element counter cost a quarter of the pass).
    void count_fails(const float* ratio, std::int64_t* count) const {
        each_cell([&](std::size_t k, int lo, int n) {
            std::int64_t fails = 0;
            for (int i = lo; i < lo + n; ++i) {
                fails += ratio[i] > 1;
            }
            count[k] += fails;
        });
    }
    // Each cell's element of largest ratio (lowest logical index on a tie): `first_row` is the
    // source row that worst_row counts from, `source_cols` the row length.
    void worst(const Band& band, std::int64_t first_row, std::int64_t source_cols, std::int64_t* worst_index,
               float* worst_ratio) const {
        each_cell([&](std::size_t k, int lo, int n) {
            for (int i = lo; i < lo + n; ++i) {
                const float r = band.ratio[i];
                const std::int64_t index = (first_row + band.worst_row[i]) * source_cols + c0 + i;
                if (r > worst_ratio[k] ||
                    (r == worst_ratio[k] && (worst_index[k] < 0 || index < worst_index[k]))) {
                    worst_ratio[k] = r;
                    worst_index[k] = index;
                }
            }
        });
    }
};

} // namespace pkbw::maps::detail
