// The error-map pass (compare_maps.h) against the element rule: every per-cell figure is recomputed
// here element by element, each element judged by compare_tensors itself on a one-element pair.
#include "pkbw/core/compare.h"
#include "pkbw/core/compare_maps.h"
#include "pkbw/core/dtype.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>

using namespace pkbw;

namespace {

constexpr double kAtol = 0.01, kRtol = 0.01;

Tensor f32_tensor(std::int64_t rows, std::int64_t cols, const std::vector<float>& values) {
    Tensor t = Tensor::zeros(DType::F32, {rows, cols});
    std::memcpy(t.mutable_data_as<float>(), values.data(), values.size() * sizeof(float));
    return t;
}

// A reference and a candidate with small errors, a few mismatches, a NaN and an infinity.
struct Pair {
    std::int64_t rows, cols;
    std::vector<float> ref, cand;
};

Pair make_pair(std::int64_t rows, std::int64_t cols, unsigned seed) {
    Pair p{rows, cols, std::vector<float>(rows * cols), std::vector<float>(rows * cols)};
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::uniform_int_distribution<int> pick(0, 99);
    for (std::size_t i = 0; i < p.ref.size(); ++i) {
        p.ref[i] = normal(rng);
        const int kind = pick(rng);
        p.cand[i] = kind < 80   ? p.ref[i] * (1 + 1e-4f * normal(rng))
                    : kind < 90 ? p.ref[i]
                                : p.ref[i] + normal(rng);
    }
    p.cand[7] = std::numeric_limits<float>::quiet_NaN();
    p.ref[p.ref.size() / 2] = std::numeric_limits<float>::infinity();
    return p;
}

bool element_fails(float ref, float cand) {
    CompareOptions options;
    options.atol = kAtol;
    options.rtol = kRtol;
    return !compare_tensors(f32_tensor(1, 1, {ref}), f32_tensor(1, 1, {cand}), options).pass;
}

// What every cell must hold, from the elements.
void expect_cells_match_elements(const Pair& p, int max_side) {
    const Tensor ref = f32_tensor(p.rows, p.cols, p.ref), cand = f32_tensor(p.rows, p.cols, p.cand);
    const maps::ErrorAnalysis a = maps::analyse_error(ref, cand, kAtol, kRtol, max_side);
    CompareOptions options;
    options.atol = kAtol;
    options.rtol = kRtol;
    const TensorComparison whole = compare_tensors(ref, cand, options);
    EXPECT_EQ(a.mismatch_count, whole.mismatch_count);
    EXPECT_EQ(a.first_mismatch, whole.first_mismatch);
    EXPECT_EQ(a.worst_mismatch, whole.worst_mismatch);
    EXPECT_FLOAT_EQ(static_cast<float>(a.max_abs_diff), static_cast<float>(whole.max_abs_error));

    const int rows = a.ratio.rows, cols = a.ratio.cols;
    ASSERT_EQ(a.diff.rows, rows);
    ASSERT_EQ(a.cell_mismatches.size(), static_cast<std::size_t>(rows) * cols);
    std::int64_t counted = 0;
    for (int cr = 0; cr < rows; ++cr) {
        for (int cc = 0; cc < cols; ++cc) {
            const std::size_t k = static_cast<std::size_t>(cr) * cols + cc;
            std::int64_t fails = 0;
            float best_diff = 0, best_mag = -1;
            bool masked = false;
            for (std::int64_t r = 0; r < p.rows; ++r) {
                if (r * rows / p.rows != cr)
                    continue;
                for (std::int64_t c = 0; c < p.cols; ++c) {
                    if (c * cols / p.cols != cc)
                        continue;
                    const std::size_t i = static_cast<std::size_t>(r * p.cols + c);
                    fails += element_fails(p.ref[i], p.cand[i]);
                    const float d = p.cand[i] - p.ref[i];
                    if (!std::isfinite(d)) {
                        masked = true;
                    } else if (std::fabs(d) > best_mag || (std::fabs(d) == best_mag && d > best_diff)) {
                        best_mag = std::fabs(d);
                        best_diff = d;
                    }
                }
            }
            counted += fails;
            EXPECT_EQ(a.cell_mismatches[k], fails) << "cell " << cr << "," << cc;
            if (masked) {
                EXPECT_TRUE(std::isnan(a.diff.values[k])) << "cell " << cr << "," << cc;
                EXPECT_TRUE(std::isnan(a.abs_diff.values[k]));
            } else {
                EXPECT_EQ(a.diff.values[k], best_diff) << "cell " << cr << "," << cc;
                EXPECT_EQ(a.abs_diff.values[k], best_mag);
            }
            // The cell's worst element lies in the cell, its values are the tensors' values there,
            // and it fails whenever any element of the cell does.
            const std::int64_t w = a.cell_worst[k];
            ASSERT_GE(w, 0);
            EXPECT_EQ((w / p.cols) * rows / p.rows, cr);
            EXPECT_EQ((w % p.cols) * cols / p.cols, cc);
            const auto wi = static_cast<std::size_t>(w);
            EXPECT_TRUE(std::memcmp(&a.cell_worst_ref[k], &p.ref[wi], 4) == 0);
            EXPECT_TRUE(std::memcmp(&a.cell_worst_cand[k], &p.cand[wi], 4) == 0);
            EXPECT_EQ(element_fails(p.ref[wi], p.cand[wi]), fails > 0) << "cell " << cr << "," << cc;
            EXPECT_EQ(a.ratio.values[k] > 1 || std::isnan(a.ratio.values[k]), fails > 0);
        }
    }
    EXPECT_EQ(counted, whole.mismatch_count);
}

TEST(CompareMaps, PooledCellsMatchTheElementRule) {
    expect_cells_match_elements(make_pair(37, 53, 1), 8);
}

TEST(CompareMaps, UnpooledGridIsElementwise) {
    expect_cells_match_elements(make_pair(9, 11, 2), 64); // one element per cell
}

TEST(CompareMaps, CellsWiderThanAKernelChunk) {
    // 3 x 1500 into 2 x 2: a cell spans three of the kernel's 512-column chunks.
    expect_cells_match_elements(make_pair(3, 1500, 3), 2);
}

TEST(CompareMaps, WorstElementOfTheWholeTensorIsACellsWorst) {
    const Pair p = make_pair(64, 64, 4);
    const maps::ErrorAnalysis a =
        maps::analyse_error(f32_tensor(64, 64, p.ref), f32_tensor(64, 64, p.cand), kAtol, kRtol, 16);
    ASSERT_GE(a.worst_mismatch, 0);
    const maps::CellPos at = maps::locate(a.ratio, a.worst_mismatch);
    EXPECT_EQ(a.cell_worst[static_cast<std::size_t>(at.map_row) * a.ratio.cols + at.map_col],
              a.worst_mismatch);
}

TEST(CompareMaps, Bf16TakesTheSamePath) {
    const Pair p = make_pair(16, 24, 5);
    Tensor ref = Tensor::zeros(DType::BF16, {16, 24}), cand = Tensor::zeros(DType::BF16, {16, 24});
    Pair rounded = p;
    for (std::size_t i = 0; i < p.ref.size(); ++i) {
        std::uint32_t a, b;
        std::memcpy(&a, &p.ref[i], 4);
        std::memcpy(&b, &p.cand[i], 4);
        const std::uint16_t ha = static_cast<std::uint16_t>(a >> 16),
                            hb = static_cast<std::uint16_t>(b >> 16);
        std::memcpy(ref.mutable_data() + 2 * i, &ha, 2);
        std::memcpy(cand.mutable_data() + 2 * i, &hb, 2);
        const std::uint32_t fa = static_cast<std::uint32_t>(ha) << 16, fb = static_cast<std::uint32_t>(hb)
                                                                            << 16;
        std::memcpy(&rounded.ref[i], &fa, 4);
        std::memcpy(&rounded.cand[i], &fb, 4);
    }
    const maps::ErrorAnalysis a = maps::analyse_error(ref, cand, kAtol, kRtol, 4);
    const maps::ErrorAnalysis b = maps::analyse_error(f32_tensor(16, 24, rounded.ref),
                                                      f32_tensor(16, 24, rounded.cand), kAtol, kRtol, 4);
    EXPECT_EQ(a.cell_mismatches, b.cell_mismatches);
    EXPECT_EQ(a.cell_worst, b.cell_worst);
    EXPECT_EQ(a.mismatch_count, b.mismatch_count);
}

// The signed difference map the obvious way, one element at a time: each cell keeps cand - ref of
// largest magnitude (the positive one on a tie), a cell holding a non-finite difference is masked;
// max |diff| over finite differences with the lowest index holding it.
struct DifferenceReference {
    std::vector<float> cells;
    std::vector<bool> masked;
    std::int64_t masked_cells = 0, nonfinite = 0, max_index = -1;
    float max_abs = 0;
};

DifferenceReference reference_difference(const Pair& p, int map_rows, int map_cols) {
    DifferenceReference out;
    out.cells.assign(static_cast<std::size_t>(map_rows) * map_cols, 0.0f);
    out.masked.assign(out.cells.size(), false);
    for (std::int64_t i = 0; i < p.rows * p.cols; ++i) {
        const std::int64_t r = i / p.cols, c = i % p.cols;
        const std::size_t k =
            static_cast<std::size_t>((r * map_rows / p.rows) * map_cols + c * map_cols / p.cols);
        const float d = p.cand[static_cast<std::size_t>(i)] - p.ref[static_cast<std::size_t>(i)];
        if (!std::isfinite(d)) {
            ++out.nonfinite;
            out.masked[k] = true;
            continue;
        }
        float& v = out.cells[k];
        if (std::fabs(d) > std::fabs(v) || (std::fabs(d) == std::fabs(v) && d > v)) {
            v = d;
        }
        if (out.max_index < 0 || std::fabs(d) > out.max_abs) {
            out.max_abs = std::fabs(d);
            out.max_index = i;
        }
    }
    for (bool m : out.masked) {
        out.masked_cells += m;
    }
    return out;
}

// Differences on a ramp from -0.8 to 1.2 over ramping values (both signs, no two alike), a NaN on
// each side, an infinity, equal infinities (no mismatch, but inf - inf is NaN), and at `peaks` the
// largest |diff|, 8, reached several times with alternating signs (the first negative).
Pair ramp_pair(std::int64_t rows, std::int64_t cols, const std::vector<std::int64_t>& peaks) {
    const std::int64_t n = rows * cols;
    Pair p{rows, cols, std::vector<float>(n), std::vector<float>(n)};
    for (std::int64_t i = 0; i < n; ++i) {
        const float x = static_cast<float>(i) / static_cast<float>(n);
        p.ref[static_cast<std::size_t>(i)] = 3.0f * x - 1.0f;
        p.cand[static_cast<std::size_t>(i)] = p.ref[static_cast<std::size_t>(i)] + 2.0f * (x - 0.4f);
    }
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    p.cand[5] = nan;
    p.ref[static_cast<std::size_t>(n / 4)] = nan;
    p.ref[static_cast<std::size_t>(n / 3)] = inf;
    p.ref[static_cast<std::size_t>(n / 2)] = p.cand[static_cast<std::size_t>(n / 2)] = -inf;
    for (std::size_t j = 0; j < peaks.size(); ++j) {
        const auto i = static_cast<std::size_t>(peaks[j]);
        p.ref[i] = 0;
        p.cand[i] = j % 2 == 0 ? -8.0f : 8.0f;
    }
    return p;
}

void expect_difference_matches_elements(const Pair& p, int max_side) {
    const maps::ErrorAnalysis a = maps::analyse_error(
        f32_tensor(p.rows, p.cols, p.ref), f32_tensor(p.rows, p.cols, p.cand), kAtol, kRtol, max_side);
    const DifferenceReference want = reference_difference(p, a.ratio.rows, a.ratio.cols);
    ASSERT_EQ(a.diff.rows, a.ratio.rows);
    ASSERT_EQ(a.diff.cols, a.ratio.cols);
    ASSERT_EQ(a.diff.values.size(), want.cells.size());
    for (std::size_t k = 0; k < want.cells.size(); ++k) {
        if (want.masked[k]) {
            EXPECT_TRUE(std::isnan(a.diff.values[k])) << "cell " << k;
            EXPECT_TRUE(std::isnan(a.abs_diff.values[k])) << "cell " << k;
        } else {
            EXPECT_EQ(a.diff.values[k], want.cells[k]) << "cell " << k;
            EXPECT_EQ(a.abs_diff.values[k], std::fabs(want.cells[k])) << "cell " << k;
        }
    }
    EXPECT_EQ(a.diff.masked_elements, want.masked_cells);
    EXPECT_EQ(a.nonfinite_diffs, want.nonfinite);
    EXPECT_EQ(a.max_abs_diff, static_cast<double>(want.max_abs));
    EXPECT_EQ(a.max_diff_index, want.max_index);
}

TEST(CompareMaps, SignedDifferenceMapIsThePerElementDifference) {
    // 13 x 37 into 8 x 8 (uneven cells, a ragged last vector). The peaks lie in row 2: columns 11 and
    // 12 share a cell (-8 and +8: the cell keeps +8), 19 shares a vector lane with 11 and 30 is in
    // another vector; the first peak, at column 11, is max |diff|'s element.
    const Pair small = ramp_pair(13, 37, {2 * 37 + 11, 2 * 37 + 12, 2 * 37 + 19, 2 * 37 + 30});
    expect_difference_matches_elements(small, 8);
    expect_difference_matches_elements(small, 64); // one element per cell
    {
        const maps::ErrorAnalysis a = maps::analyse_error(f32_tensor(13, 37, small.ref),
                                                          f32_tensor(13, 37, small.cand), kAtol, kRtol, 8);
        EXPECT_EQ(a.max_diff_index, 2 * 37 + 11);
        EXPECT_EQ(a.max_abs_diff, 8.0);
        EXPECT_EQ(a.nonfinite_diffs, 4); // the two NaNs, the infinity, the equal infinities
        EXPECT_EQ(a.diff.values[1 * 8 + 2], 8.0f);
    }
    // 3 x 1500 into 2 x 2: the segments of a map row are visited chunk by chunk, so (1, 100) is seen
    // before (0, 600); the lower index still wins.
    expect_difference_matches_elements(ramp_pair(3, 1500, {600, 1500 + 100}), 2);
    // Over 2^20 elements (row bands on threads): the peaks in the first and the last band.
    expect_difference_matches_elements(ramp_pair(1100, 1000, {999, 1099 * 1000}), 100);
}

TEST(CompareMaps, DifferenceOfEqualOrNonFiniteTensors) {
    // Equal tensors: max |diff| 0 at the first element. Non-finite everywhere: no element, every cell masked.
    const std::vector<float> ones(6 * 10, 1.0f), nans(6 * 10, std::numeric_limits<float>::quiet_NaN());
    const maps::ErrorAnalysis same =
        maps::analyse_error(f32_tensor(6, 10, ones), f32_tensor(6, 10, ones), kAtol, kRtol, 4);
    EXPECT_EQ(same.max_diff_index, 0);
    EXPECT_EQ(same.max_abs_diff, 0.0);
    EXPECT_EQ(same.nonfinite_diffs, 0);
    const maps::ErrorAnalysis none =
        maps::analyse_error(f32_tensor(6, 10, ones), f32_tensor(6, 10, nans), kAtol, kRtol, 4);
    EXPECT_EQ(none.max_diff_index, -1);
    EXPECT_EQ(none.nonfinite_diffs, 60);
    EXPECT_EQ(none.diff.masked_elements, 16);
}

} // namespace
