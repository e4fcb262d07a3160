// PKB's allclose rule, streamed chunk by chunk (compare_kernel.h), with the statistics PKB never
// reports. docs/comparison.md explains every definition used here.
#include "pkbw/core/compare.h"

#include "compare_kernel.h"
#include "compare_sides.h"
#include "pkbw/core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pkbw {
namespace {

using detail::ChunkReader;
using detail::ChunkStats;
using detail::kChunk;
using detail::RawUlp;
using detail::UlpKind;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Max-pools error ratios into the map, cell by cell, as chunks stream past in row-major order.
class MapPooler {
public:
    MapPooler(ErrorMap& map, std::int64_t row_block, std::int64_t col_block)
        : map_(map) {
        geometry_ = {map.source_rows, map.source_cols, row_block, col_block, map.cols};
        if (col_block < 64) { // narrow cells: pool down the rows first (at most 64 * max_side floats)
            band_.assign(static_cast<std::size_t>(map.source_cols), 0.0f);
        }
    }
    void add(std::int64_t position, const float* ratio, std::int64_t n) {
        detail::pool_chunk(geometry_, position, ratio, n, band_.empty() ? nullptr : band_.data(),
                           map_.ratio.data());
    }

private:
    ErrorMap& map_;
    detail::PoolGeometry geometry_;
    std::vector<float> band_;
};

// Smallest f32 t >= 0 with fl(t + x) >= d: the atol at which an element with actual error d and
// rtol term x starts to pass. fl(t + x) grows monotonically with t, so bisect over f32 bit patterns.
float element_min_atol(float d, float x) {
    if (!(d < std::numeric_limits<float>::infinity())) {
        return std::numeric_limits<float>::infinity();
    }
    const auto passes = [&](float t) { return t + x >= d; };
    if (passes(0.0f)) {
        return 0.0f;
    }
    std::uint32_t lo = 0, hi = std::bit_cast<std::uint32_t>(d); // t = d always passes (x >= 0)
    while (hi - lo > 1) {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        (passes(std::bit_cast<float>(mid)) ? hi : lo) = mid;
    }
    return std::bit_cast<float>(hi);
}

// Upper bound, with margin, of element_min_atol(d, x) given g = fl(d - x): that minimum is at most
// the smallest f32 >= d - x, which lies within one ulp of g.
double min_atol_bound(float g) {
    return static_cast<double>(g) + std::fabs(static_cast<double>(g)) * 0x1p-21 + 0x1p-140;
}

// A chunk's values on one side, for the rare scalar rescans: widened words or raw bf16.
struct Values {
    const std::uint32_t* words = nullptr;
    const std::uint16_t* halves = nullptr;
    float operator[](std::int64_t i) const {
        return halves ? std::bit_cast<float>(static_cast<std::uint32_t>(halves[i]) << 16)
                      : std::bit_cast<float>(words[i]);
    }
};

struct SideTotals {
    std::int64_t nan = 0, inf = 0, zero = 0;
    double sum = 0;
    float min = std::numeric_limits<float>::infinity(), max = -std::numeric_limits<float>::infinity();

    void add(const ChunkStats& c, int s) {
        zero += c.zero[s];
        sum += c.sum[s];
        min = std::min(min, c.min[s]);
        max = std::max(max, c.max[s]);
    }
    void count_nonfinite(float v) {
        nan += std::isnan(v);
        inf += std::isinf(v);
    }
    ValueSummary summary(std::int64_t numel) const {
        ValueSummary v;
        v.nan_count = nan;
        v.inf_count = inf;
        v.zero_count = zero;
        const std::int64_t finite = numel - nan - inf;
        if (finite > 0) {
            v.min = min;
            v.max = max;
            v.mean = sum / static_cast<double>(finite);
        }
        v.all_zero = numel > 0 && zero == numel;
        v.constant = finite > 0 && min == max;
        return v;
    }
};

std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

Shape unravel(std::int64_t linear, const Shape& shape) {
    Shape index(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        index[d] = linear % shape[d];
        linear /= shape[d];
    }
    return index;
}

void setup_map(ErrorMap& map, const Shape& shape, std::int64_t numel, int max_side, std::int64_t& row_block,
               std::int64_t& col_block) {
    map.source_cols = shape.empty() ? 1 : shape.back();
    map.source_rows = map.source_cols == 0 ? 0 : numel / map.source_cols;
    if (shape.size() <= 1) {
        map.source_rows = numel > 0 ? 1 : 0;
    }
    const std::int64_t side = std::max(1, max_side);
    row_block = std::max<std::int64_t>(1, (map.source_rows + side - 1) / side);
    col_block = std::max<std::int64_t>(1, (map.source_cols + side - 1) / side);
    if (numel == 0) {
        return;
    }
    map.rows = static_cast<int>((map.source_rows + row_block - 1) / row_block);
    map.cols = static_cast<int>((map.source_cols + col_block - 1) / col_block);
    map.ratio.assign(static_cast<std::size_t>(map.rows) * map.cols, 0.0f);
}

// Which rows (dim 0) of an output are tie rows and which hold a mismatched element, for the TieReport.
class TieRowMarks {
public:
    TieRowMarks(const TieRows& ties, const Shape& shape, std::int64_t numel)
        : row_count_(shape.empty() ? 1 : shape[0])
        , row_size_(row_count_ > 0 ? numel / row_count_ : 1)
        , tie_(static_cast<std::size_t>(row_count_), 0)
        , bad_(static_cast<std::size_t>(row_count_), 0) {
        for (const std::int64_t row : ties.rows) {
            if (row >= 0 && row < row_count_) {
                tie_[static_cast<std::size_t>(row)] = 1;
            }
        }
    }
    void mismatch_at(std::int64_t linear) {
        const auto row = static_cast<std::size_t>(linear / row_size_);
        bad_[row] = 1;
        in_tie_rows_ += tie_[row];
    }
    void fill(TieReport& report, std::int64_t mismatch_count) const {
        report.classified = true;
        report.mismatched_elements = mismatch_count;
        report.mismatched_elements_in_tie_rows = in_tie_rows_;
        for (std::size_t row = 0; row < bad_.size(); ++row) {
            if (bad_[row]) {
                (tie_[row] ? report.mismatched_rows_in_tie_rows : report.mismatched_rows_outside) += 1;
            }
        }
    }

private:
    std::int64_t row_count_, row_size_;
    std::vector<std::uint8_t> tie_, bad_;
    std::int64_t in_tie_rows_ = 0;
};

} // namespace

TensorComparison comparison_header(const std::string& name, const Tensor& ref, const Tensor& cand) {
    TensorComparison out;
    out.name = name;
    out.ref_shape = ref.shape();
    out.cand_shape = cand.shape();
    out.ref_dtype = ref.dtype();
    out.cand_dtype = cand.dtype();
    out.dtype_match = out.ref_dtype == out.cand_dtype;
    return out;
}

namespace {

// The first and the worst failing element of a chunk whose ratios (|a - b| over the tolerance) say it
// has some, and the tie rows they fall in.
void locate_mismatches(const float* ratio, std::int64_t n, std::int64_t position, TieRowMarks* tie_marks,
                       float& worst_bad, TensorComparison& out) {
    for (std::int64_t i = 0; i < n; ++i) {
        if (ratio[i] > 1.0f) {
            if (tie_marks) {
                tie_marks->mismatch_at(position + i);
            }
            if (out.first_mismatch < 0) {
                out.first_mismatch = position + i;
            }
            if (ratio[i] > worst_bad || out.worst_mismatch < 0) {
                worst_bad = ratio[i];
                out.worst_mismatch = position + i;
            }
        }
    }
}

// The smallest atol at which every finite element of the chunk passes, folded into `min_atol`.
void raise_min_atol(const Values& a, const Values& b, std::int64_t n, const detail::Tolerance& tol,
                    float& min_atol) {
    for (std::int64_t i = 0; i < n; ++i) {
        const float va = a[i], vb = b[i];
        if (!std::isfinite(va) || !std::isfinite(vb)) {
            continue;
        }
        const float d = std::fabs(va - vb), x = tol.rtol * std::fabs(vb);
        if (min_atol_bound(d - x) >= min_atol) {
            min_atol = std::max(min_atol, element_min_atol(d, x));
        }
    }
}

// A chunk holding a NaN or an infinity, element by element: NaN told from Inf on each side, and the
// mismatches whose difference is not finite counted.
void count_nonfinite(const Values& a, const Values& b, std::int64_t n, SideTotals (&totals)[2],
                     std::int64_t& bad_nonfinite) {
    for (std::int64_t i = 0; i < n; ++i) {
        const float va = a[i], vb = b[i];
        totals[0].count_nonfinite(va);
        totals[1].count_nonfinite(vb);
        bad_nonfinite += va != vb && !std::isfinite(va - vb);
    }
}

// The figures streamed over every chunk into `out`: both sides' value summaries, the mismatch fraction,
// the smallest passing atol (none when a mismatch is not finite) and the max ULP distance in the pair's
// own format.
void finish_figures(const SideTotals (&totals)[2], std::int64_t bad_nonfinite, float min_atol, UlpKind ulp,
                    std::uint64_t max_ulp, TensorComparison& out) {
    out.ref_summary = totals[0].summary(out.numel);
    out.cand_summary = totals[1].summary(out.numel);
    out.mismatch_fraction = static_cast<double>(out.mismatch_count) / static_cast<double>(out.numel);
    out.min_passing_atol = bad_nonfinite > 0 ? kInf : static_cast<double>(min_atol);
    if (ulp == UlpKind::BF16) {
        max_ulp >>= 16;
    }
    if (ulp != UlpKind::None) {
        out.max_ulp = max_ulp;
    }
}

// The one-line verdict of a failing comparison (PKB's allclose words, the first failure's index, the
// non-finite mismatches and the tie report).
std::string mismatch_message(const TensorComparison& out, const std::string& name,
                             const CompareOptions& options, const std::vector<std::int64_t>& shape,
                             std::int64_t bad_nonfinite) {
    std::string message =
        name + ": tensors not allclose (atol=" + number(options.atol) + ", rtol=" + number(options.rtol) +
        "); max_abs_diff=" + number(out.max_abs_error) + " mismatches=" + std::to_string(out.mismatch_count) +
        "/" + std::to_string(out.numel) + " first at " + shape_to_string(unravel(out.first_mismatch, shape));
    if (bad_nonfinite > 0) {
        message += " non-finite mismatches=" + std::to_string(bad_nonfinite);
    }
    if (out.ties) {
        message += "; " + tie_report_text(*out.ties);
    }
    return message;
}

} // namespace

TensorComparison compare_tensors(const Tensor& ref, const Tensor& cand, const CompareOptions& options,
                                 const std::string& name, const TieRows* ties) {
    if (!ref.defined() || !cand.defined()) {
        throw Error(name + ": cannot compare an undefined " + (ref.defined() ? "candidate" : "reference") +
                    " tensor");
    }
    TensorComparison out = comparison_header(name, ref, cand);
    out.shape_match = ref.shape() == cand.shape();
    if (ties != nullptr) {
        out.ties = TieReport{*ties};
    }
    if (!out.shape_match) {
        out.message = name + ": tensor shape ref " + shape_to_string(ref.shape()) + " vs cand " +
                      shape_to_string(cand.shape());
        return out;
    }
    const std::int64_t numel = ref.numel();
    out.numel = numel;
    std::int64_t row_block = 1, col_block = 1;
    setup_map(out.error_map, ref.shape(), numel, options.error_map_max_side, row_block, col_block);
    const UlpKind ulp = detail::ulp_kind(ref.dtype(), cand.dtype());
    if (ulp != UlpKind::None) {
        out.max_ulp = 0;
    }
    if (numel == 0) {
        out.pass = true;
        return out;
    }

    const detail::Tolerance tol{static_cast<float>(options.atol), static_cast<float>(options.rtol)};
    ChunkReader side_a(ref), side_b(cand);
    std::optional<RawUlp> raw_ulp;
    if (ulp == UlpKind::Raw) {
        raw_ulp.emplace(ref, cand);
    }
    MapPooler pooler(out.error_map, row_block, col_block);
    std::optional<TieRowMarks> tie_marks;
    if (ties != nullptr) {
        tie_marks.emplace(*ties, ref.shape(), numel);
    }
    std::vector<float> ratio(kChunk);
    SideTotals totals[2];
    std::int64_t bad_nonfinite = 0;
    float worst_bad = 1.0f;
    float min_atol = 0.0f;
    std::uint64_t max_ulp = 0;

    const bool bf16_pair = side_a.direct_bf16() && side_b.direct_bf16();
    for (std::int64_t position = 0; position < numel; position += kChunk) {
        const std::int64_t n = std::min(kChunk, numel - position);
        ChunkStats c;
        Values a, b;
        if (bf16_pair) {
            a.halves = side_a.halves(position);
            b.halves = side_b.halves(position);
            detail::compare_chunk_bf16(a.halves, b.halves, n, tol, ratio.data(), c);
        } else {
            a.words = side_a.next(position, n);
            b.words = side_b.next(position, n);
            detail::compare_chunk(a.words, b.words, n, tol, ratio.data(), c);
        }

        totals[0].add(c, 0);
        totals[1].add(c, 1);
        out.mismatch_count += c.bad;
        if (c.nonfinite[0] + c.nonfinite[1] > 0) { // rare: split NaN from Inf, find non-finite mismatches
            count_nonfinite(a, b, n, totals, bad_nonfinite);
        }
        out.max_abs_error = std::max(out.max_abs_error, static_cast<double>(c.max_abs));
        out.max_rel_error = std::max(out.max_rel_error, static_cast<double>(c.max_rel));
        out.worst_ratio = std::max(out.worst_ratio, static_cast<double>(c.worst));
        max_ulp = std::max<std::uint64_t>(max_ulp, raw_ulp ? raw_ulp->chunk_max(n) : c.max_ulp32);
        pooler.add(position, ratio.data(), n);

        if (c.bad > 0) { // rare: find the first and the worst failing element
            locate_mismatches(ratio.data(), n, position, tie_marks ? &*tie_marks : nullptr, worst_bad, out);
        }
        if (min_atol_bound(c.max_g) >= min_atol) { // this chunk may raise the minimum passing atol
            raise_min_atol(a, b, n, tol, min_atol);
        }
    }

    finish_figures(totals, bad_nonfinite, min_atol, ulp, max_ulp, out);
    out.pass = out.mismatch_count == 0;
    if (!out.pass) {
        if (tie_marks) {
            tie_marks->fill(*out.ties, out.mismatch_count);
        }
        out.message = mismatch_message(out, name, options, ref.shape(), bad_nonfinite);
    }
    return out;
}

} // namespace pkbw
