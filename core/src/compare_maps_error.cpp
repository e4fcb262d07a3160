// The error analysis of an output pair (analyse_error): one pass over both tensors fills the ratio,
// difference and value maps, the per-cell mismatch counts and worst elements, and the tensor-wide
// figures (mismatches, worst ratio, max |diff|, the log10 ratio histogram), with the thread partials'
// merge. The band machinery it shares with pool_values is in compare_maps_pass.h.
#include "compare_maps_pass.h"
#include "pkbw/core/compare_maps.h"
#include "pkbw/core/error.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

namespace pkbw::maps {
namespace {

using namespace detail;

// Histogram slots: the log10 bins, then exact matches (ratio 0), then NaN/Inf mismatches (+inf).
inline constexpr int kExactSlot = kHistogramBins, kNonFiniteSlot = kHistogramBins + 1,
                     kSlots = kHistogramBins + 2;

// Lower edges of the log10 histogram's bins (edges[b] = 10^(min + b * width)), plus the top.
std::array<double, kHistogramBins + 1> histogram_edges() {
    std::array<double, kHistogramBins + 1> edges{};
    const double width = (kHistogramLog10Max - kHistogramLog10Min) / kHistogramBins;
    for (int b = 0; b <= kHistogramBins; ++b) {
        edges[static_cast<std::size_t>(b)] = std::pow(10.0, kHistogramLog10Min + b * width);
    }
    return edges;
}

// The slot of a ratio, without a log10 per element (once most of the cost of an 8192^2 map) and
// without branches: the float's exponent and top six mantissa bits (1/64 octave) index a table of
// the slot at the entry's low end. An entry that a bin edge passes through (at most one: edges are
// a quarter decade apart) also holds that edge's low 17 bits (the smallest f32 at or above the
// edge, which shares the entry's high bits), and ratios from there up go one bin up: the bins are
// exactly those of comparisons against the edges. Entry = slot | threshold << 8.
struct BinTable {
    static constexpr int kShift = 17;
    static constexpr std::uint32_t kLowMask = (1u << kShift) - 1, kNever = 1u << kShift;
    static constexpr std::uint32_t kEntries = 1u << 14; // ratios are >= 0: no sign bit
    std::array<std::uint32_t, kEntries> entries;

    BinTable() {
        const auto edges = histogram_edges();
        auto exact = [&](double ratio) { // the bin of a finite ratio > 0, clamped into range
            const auto it = std::upper_bound(edges.begin() + 1, edges.end() - 1, ratio);
            return static_cast<int>(it - edges.begin()) - 1;
        };
        for (std::uint32_t key = 0; key < kEntries; ++key) {
            const float lo = std::bit_cast<float>(key << kShift);
            const float top = std::nextafter(std::bit_cast<float>((key + 1) << kShift), 0.0f);
            std::uint32_t slot, threshold = kNever;
            if (key == 0) { // 0 alone: a ratio that is not 0 is at least 2^-125 (tensormaps_kernel.h)
                slot = kExactSlot;
            } else if (!std::isfinite(lo)) {
                slot = kNonFiniteSlot;
            } else {
                slot = static_cast<std::uint32_t>(exact(lo));
                if (exact(top) != static_cast<int>(slot)) {
                    const double edge = edges[slot + 1];
                    float f = static_cast<float>(edge);
                    f = static_cast<double>(f) < edge ? std::nextafter(f, kInf) : f;
                    threshold = std::bit_cast<std::uint32_t>(f) & kLowMask;
                }
            }
            entries[key] = slot | threshold << 8;
        }
    }
    int slot(float ratio) const {
        const std::uint32_t bits = std::bit_cast<std::uint32_t>(ratio);
        const std::uint32_t e = entries[bits >> kShift];
        return static_cast<int>((e & 0xFF) + ((bits & kLowMask) >= (e >> 8)));
    }
    // Four interleaved histograms, so that runs of equal slots do not wait on each other's stores.
    void count(const float* ratio, int n, std::array<std::int64_t, kSlots>* h) const {
        std::int64_t *h0 = h[0].data(), *h1 = h[1].data(), *h2 = h[2].data(), *h3 = h[3].data();
        int i = 0;
        for (; i + 4 <= n; i += 4) {
            ++h0[slot(ratio[i])];
            ++h1[slot(ratio[i + 1])];
            ++h2[slot(ratio[i + 2])];
            ++h3[slot(ratio[i + 3])];
        }
        for (; i < n; ++i) {
            ++h0[slot(ratio[i])];
        }
    }
};

// The largest finite |cand - ref| and the lowest logical index holding it, whatever order the
// segments and threads come in.
struct MaxDiff {
    float value = 0;
    std::int64_t index = -1; // -1 while no finite difference was seen
    void take(float v, std::int64_t i) {
        if (index < 0 || v > value || (v == value && i < index)) {
            value = v;
            index = i;
        }
    }
};

// One thread's share of an error analysis.
struct Partial {
    std::int64_t mismatches = 0, first = -1, worst = -1;
    std::int64_t masked[2] = {0, 0};
    std::int64_t nonfinite_diffs = 0;
    double worst_ratio = 0;
    MaxDiff max_diff;
    std::array<std::int64_t, kSlots> slots[4]{};

    // Updates first and worst from one row segment starting at logical index `pos`. The segments of
    // a band are not visited in logical order (chunk by chunk within a map row), hence the index
    // comparisons; a segment is only rescanned when it holds a failing element that can matter.
    void track(const SegmentStats& s, const float* ratio, int n, std::int64_t pos) {
        mismatches += s.fails;
        nonfinite_diffs += s.diff_nonfinite;
        if (s.max_diff_at >= 0) {
            max_diff.take(s.max_abs_diff, pos + s.max_diff_at);
        }
        if (s.fails > 0 && (first < 0 || pos < first)) {
            const std::int64_t i = std::find_if(ratio, ratio + n, [](float r) { return r > 1; }) - ratio;
            first = first < 0 ? pos + i : std::min(first, pos + i);
        }
        const double m = s.max_ratio;
        if (m > 1 && (m > worst_ratio || (m == worst_ratio && pos < worst))) {
            const std::int64_t index = pos + (std::find(ratio, ratio + n, s.max_ratio) - ratio);
            if (m > worst_ratio || index < worst) {
                worst = index;
            }
        }
        worst_ratio = std::max(worst_ratio, m);
    }
};
// The bands' counters into `a` (and the value maps' masked counts): threads own row bands in order, so
// the first band with a mismatch holds the first mismatch, and the first band reaching the largest
// ratio holds the worst.
void merge_partials(const std::vector<Partial>& partial, ErrorAnalysis& a, PooledMap (&values)[2]) {
    for (const Partial& p : partial) {
        a.mismatch_count += p.mismatches;
        if (a.first_mismatch < 0 && p.first >= 0) {
            a.first_mismatch = p.first;
        }
        if (p.worst >= 0 && (a.worst_mismatch < 0 || p.worst_ratio > a.worst_ratio)) {
            a.worst_mismatch = p.worst;
        }
        a.worst_ratio = std::max(a.worst_ratio, p.worst_ratio);
        for (int s = 0; s < 2; ++s) {
            values[s].masked_elements += p.masked[s];
        }
        for (int b = 0; b < kHistogramBins; ++b) {
            for (const auto& h : p.slots) {
                a.histogram[static_cast<std::size_t>(b)] += h[static_cast<std::size_t>(b)];
            }
        }
        for (const auto& h : p.slots) {
            a.exact_count += h[kExactSlot];
            a.nonfinite_mismatches += h[kNonFiniteSlot];
        }
    }
    MaxDiff max_diff;
    for (const Partial& p : partial) {
        if (p.max_diff.index >= 0) {
            max_diff.take(p.max_diff.value, p.max_diff.index);
        }
        a.nonfinite_diffs += p.nonfinite_diffs;
    }
    a.max_abs_diff = max_diff.value;
    a.max_diff_index = max_diff.index;
}

// The maps' last touches once every band is in: masked cells become NaN (no colour scale places them)
// and both sides' values at each cell's worst element are read, one read per cell.
void finish_maps(const Tensor& ref, const Tensor& cand, ErrorAnalysis& a) {
    PooledMap& m = a.ratio;
    const std::size_t cells = m.values.size();
    m.masked_elements = a.nonfinite_mismatches;
    // A masked difference cell (magnitude +inf from reduce_values) is NaN in both difference maps.
    for (std::size_t k = 0; k < cells; ++k) {
        if (std::isinf(a.abs_diff.values[k])) {
            a.abs_diff.values[k] = std::numeric_limits<float>::quiet_NaN();
            ++a.diff.masked_elements;
        }
    }
    a.abs_diff.masked_elements = a.diff.masked_elements;
    // Both sides' values at each cell's worst element: one read per cell.
    a.cell_worst_ref.resize(cells);
    a.cell_worst_cand.resize(cells);
    for (std::size_t k = 0; k < cells; ++k) {
        const std::int64_t i = a.cell_worst[k];
        a.cell_worst_ref[k] = i >= 0 ? ref.get_f32(i) : std::numeric_limits<float>::quiet_NaN();
        a.cell_worst_cand[k] = i >= 0 ? cand.get_f32(i) : std::numeric_limits<float>::quiet_NaN();
    }
    for (float& v : m.values) {
        if (std::isinf(v)) {
            v = std::numeric_limits<float>::quiet_NaN(); // masked: no colour scale places it
        }
    }
}

} // namespace

ErrorAnalysis analyse_error(const Tensor& ref, const Tensor& cand, double atol, double rtol, int max_side,
                            PooledMap* ref_values, PooledMap* cand_values) {
    if (ref.numel() != cand.numel()) {
        throw Error("error map: reference " + ref.describe() + " and candidate " + cand.describe() +
                    " differ in element count");
    }
    ErrorAnalysis a;
    a.numel = ref.numel();
    a.ratio = empty_map(ref, max_side);
    PooledMap& m = a.ratio;
    if (m.rows == 0 || m.cols == 0) {
        return a;
    }
    const std::size_t cells = static_cast<std::size_t>(m.rows) * m.cols;
    m.values.assign(cells, 0.0f);
    // Both value maps are pooled in the same pass (one read of each tensor), on the ratio map's
    // geometry whatever cand's shape; magnitude holds each cell's largest |v| so far.
    PooledMap values[2] = {empty_map(ref, max_side), empty_map(ref, max_side)};
    std::vector<float> magnitude[2];
    for (int s = 0; s < 2; ++s) {
        values[s].values.assign(cells, 0.0f);
        magnitude[s].assign(cells, -1.0f);
    }
    a.diff = empty_map(ref, max_side);
    a.diff.values.assign(cells, 0.0f);
    a.abs_diff = a.diff;
    a.abs_diff.values.assign(cells, -1.0f); // the fold's running magnitude; -1 before the first element
    a.cell_mismatches.assign(cells, 0);
    a.cell_worst.assign(cells, -1);
    std::vector<float> cell_worst_ratio(cells, -1.0f);
    const auto col_starts = cell_starts(m.source_cols, m.cols),
               row_starts = cell_starts(m.source_rows, m.rows);
    const Access ref_access = access_of(ref), cand_access = access_of(cand);
    const bool direct = ref_access == cand_access && ref_access != Access::Converted;
    // The tolerance as core applies it (f32 scalars), so that ratio > 1 is core's verdict.
    const Tol tol{static_cast<float>(atol), static_cast<float>(rtol)};
    static const BinTable table;
    std::vector<Partial> partial(16);
    for_row_bands(m, [&](int cell_begin, int cell_end, int thread) {
        Scratch scratch;
        const Band band = scratch.band();
        float* ratio = scratch.ratio();
        Partial p; // local until the band is done, so that its counters stay in registers
        for (int cr = cell_begin; cr < cell_end; ++cr) {
            const std::size_t base = static_cast<std::size_t>(cr) * m.cols;
            for (std::int64_t c0 = 0; c0 < m.source_cols; c0 += kChunk) {
                const int n = static_cast<int>(std::min<std::int64_t>(kChunk, m.source_cols - c0));
                scratch.reset_band(n);
                for (std::int64_t r = row_starts[cr]; r < row_starts[cr + 1]; ++r) {
                    const std::int64_t pos = r * m.source_cols + c0;
                    SegmentStats s;
                    const auto row = static_cast<std::int32_t>(r - row_starts[cr]);
                    if (direct && ref_access == Access::F32) {
                        error_segment_f32(typed<float>(ref, pos), typed<float>(cand, pos), n, tol, band, row,
                                          ratio, s);
                    } else if (direct) {
                        error_segment_bf16(typed<std::uint16_t>(ref, pos), typed<std::uint16_t>(cand, pos), n,
                                           tol, band, row, ratio, s);
                    } else {
                        read_f32(ref, pos, n, scratch.row_a());
                        read_f32(cand, pos, n, scratch.row_b());
                        error_segment_f32(scratch.row_a(), scratch.row_b(), n, tol, band, row, ratio, s);
                    }
                    p.masked[0] += s.ref_nonfinite;
                    p.masked[1] += s.cand_nonfinite;
                    table.count(ratio, n, p.slots);
                    p.track(s, ratio, n, pos);
                    if (s.fails > 0) {
                        RowFold{col_starts, c0, n}.count_fails(ratio, a.cell_mismatches.data() + base);
                    }
                }
                const RowFold fold{col_starts, c0, n};
                fold.values(band.ref_hi, band.ref_lo, values[0].values.data() + base,
                            magnitude[0].data() + base);
                fold.values(band.cand_hi, band.cand_lo, values[1].values.data() + base,
                            magnitude[1].data() + base);
                fold.values(band.diff_hi, band.diff_lo, a.diff.values.data() + base,
                            a.abs_diff.values.data() + base);
                fold.maxima(band.ratio, m.values.data() + base);
                fold.worst(band, row_starts[cr], m.source_cols, a.cell_worst.data() + base,
                           cell_worst_ratio.data() + base);
            }
        }
        partial[static_cast<std::size_t>(thread)] = p;
    });
    merge_partials(partial, a, values);
    finish_maps(ref, cand, a);
    if (ref_values) {
        *ref_values = std::move(values[0]);
    }
    if (cand_values) {
        *cand_values = std::move(values[1]);
    }
    return a;
}

} // namespace pkbw::maps
