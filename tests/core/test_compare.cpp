// PKB's allclose rule and the statistics beside it, on hand-computed cases.
#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>

namespace pkbw {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

template <class T>
Tensor make(DType dtype, Shape shape, const std::vector<T>& values) {
    return Tensor::from_bytes(dtype, std::move(shape),
                              std::as_bytes(std::span<const T>(values.data(), values.size())));
}
Tensor f32(Shape shape, const std::vector<float>& v) {
    return make(DType::F32, std::move(shape), v);
}
Tensor bf16(Shape shape, const std::vector<float>& v) {
    std::vector<std::uint16_t> bits;
    for (float x : v) {
        bits.push_back(f32_to_bf16(x));
    }
    return make(DType::BF16, std::move(shape), bits);
}

CompareOptions tol(double atol, double rtol) {
    CompareOptions o;
    o.atol = atol;
    o.rtol = rtol;
    return o;
}

bool passes(float ref, float cand, CompareOptions o = {}) {
    return compare_tensors(f32({1}, {ref}), f32({1}, {cand}), o).pass;
}

TEST(Compare, RtolScalesWithCandidateNotReference) {
    // |1 - 2| = 1 <= 0 + 0.5 * |2|: passes; with rtol * |ref| it would be 1 > 0.5.
    EXPECT_TRUE(passes(1.0f, 2.0f, tol(0, 0.5)));
    // |2 - 1| = 1 > 0 + 0.5 * |1|: fails; with rtol * |ref| it would be 1 <= 1.
    EXPECT_FALSE(passes(2.0f, 1.0f, tol(0, 0.5)));
}

TEST(Compare, ExactBoundaryIsInclusive) {
    // allowed = 0.25 + 0.5 * 2 = 1.25, exactly representable.
    EXPECT_TRUE(passes(3.25f, 2.0f, tol(0.25, 0.5)));
    EXPECT_TRUE(passes(0.75f, 2.0f, tol(0.25, 0.5)));
    EXPECT_FALSE(passes(std::nextafter(3.25f, 4.0f), 2.0f, tol(0.25, 0.5)));
    // Below: |0.74999994 - 2| = 1.25000006 rounds (ties to even) to 1.25 in f32, so it still passes,
    // as torch does; one more step down fails.
    const float below = std::nextafter(0.75f, 0.0f);
    EXPECT_TRUE(passes(below, 2.0f, tol(0.25, 0.5)));
    EXPECT_FALSE(passes(std::nextafter(below, 0.0f), 2.0f, tol(0.25, 0.5)));
}

TEST(Compare, ArithmeticIsF32AsTorchDoes) {
    // In exact arithmetic |a - b| = 0.04131555... > 0.01 + 0.01 * |b| = 0.04131555...; in f32 (f32 atol
    // and rtol, each operation rounded) allowed rounds up to d, so torch.allclose says True.
    const float a = 0x1.9620a2p+1f, b = 0x1.90d6cep+1f;
    EXPECT_GT(std::fabs(double(a) - double(b)), 0.01 + 0.01 * std::fabs(double(b)));
    EXPECT_TRUE(passes(a, b, tol(0.01, 0.01)));
}

TEST(Compare, NonFiniteValues) {
    EXPECT_FALSE(passes(kNaN, kNaN));
    EXPECT_FALSE(passes(kNaN, 1.0f));
    EXPECT_FALSE(passes(1.0f, kNaN));
    EXPECT_TRUE(passes(kInf, kInf));
    EXPECT_TRUE(passes(-kInf, -kInf));
    EXPECT_FALSE(passes(kInf, -kInf));
    EXPECT_FALSE(passes(kInf, 1e30f, tol(1e38, 1e10)));
    EXPECT_FALSE(passes(1e30f, kInf, tol(1e38, 1e10)));
    // Finite operands whose difference overflows f32 fail, as torch's isfinite(actual) check makes them.
    EXPECT_FALSE(passes(3e38f, -3e38f, tol(0, 10)));
}

TEST(Compare, ShapeMismatchFailsWithMessage) {
    auto r =
        compare_tensors(f32({2, 3}, std::vector<float>(6)), f32({3, 2}, std::vector<float>(6)), {}, "out");
    EXPECT_FALSE(r.pass);
    EXPECT_FALSE(r.shape_match);
    EXPECT_EQ(r.message, "out: tensor shape ref [2, 3] vs cand [3, 2]");
    // Same count, different rank: still a mismatch.
    EXPECT_FALSE(
        compare_tensors(f32({6}, std::vector<float>(6)), f32({1, 6}, std::vector<float>(6)), {}).pass);
}

TEST(Compare, EmptyTensorsPass) {
    auto r = compare_tensors(f32({0, 3}, {}), bf16({0, 3}, {}), {});
    EXPECT_TRUE(r.pass);
    EXPECT_EQ(r.numel, 0);
    EXPECT_EQ(r.error_map.rows, 0);
}

TEST(Compare, DtypeMismatchPassesButIsReported) {
    auto r = compare_tensors(bf16({3}, {1.0f, 2.0f, -0.5f}), f32({3}, {1.0f, 2.0f, -0.5f}), {});
    EXPECT_TRUE(r.pass);
    EXPECT_FALSE(r.dtype_match);
    EXPECT_EQ(r.ref_dtype, DType::BF16);
    EXPECT_EQ(r.cand_dtype, DType::F32);
    ASSERT_TRUE(r.max_ulp.has_value());
    EXPECT_EQ(*r.max_ulp, 0u);
}

TEST(Compare, Int64ComparedAfterF32Rounding) {
    // 2^24 + 1 becomes 2^24 under .float(): equal even at zero tolerance.
    auto r = compare_tensors(make<std::int64_t>(DType::I64, {2}, {16777217, 5}),
                             make<std::int64_t>(DType::I64, {2}, {16777216, 5}), tol(0, 0));
    EXPECT_TRUE(r.pass);
    EXPECT_FALSE(r.max_ulp.has_value());
    auto bad = compare_tensors(make<std::int64_t>(DType::I64, {3}, {1, 2, 3}),
                               make<std::int64_t>(DType::I64, {3}, {1, 2, 4}), tol(0.5, 0));
    EXPECT_FALSE(bad.pass);
    EXPECT_EQ(bad.mismatch_count, 1);
    EXPECT_EQ(bad.first_mismatch, 2);
    EXPECT_DOUBLE_EQ(bad.max_abs_error, 1.0);
}

TEST(Compare, BoolOutputs) {
    auto r = compare_tensors(make<std::uint8_t>(DType::Bool, {2}, {1, 0}),
                             make<std::uint8_t>(DType::Bool, {2}, {1, 1}), tol(0.5, 0));
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.mismatch_count, 1);
    EXPECT_EQ(r.first_mismatch, 1);
    // A bool reference against a float candidate of the same values passes (dtype is not checked).
    EXPECT_TRUE(
        compare_tensors(make<std::uint8_t>(DType::Bool, {2}, {1, 0}), f32({2}, {1, 0}), tol(0, 0)).pass);
}

TEST(Compare, StatisticsOnHandComputedCase) {
    // allowed = 0.1 + 0.1|c|: [0,1] has d = 0.5 > 0.35 (ratio 1.43), [1,2] has d = 2 > 0.9 (ratio 2.22).
    const auto ref = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    const auto cand = f32({2, 3}, {1, 2.5f, 3, 4, 5, 8});
    auto r = compare_tensors(ref, cand, tol(0.1, 0.1), "y");
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.numel, 6);
    EXPECT_EQ(r.mismatch_count, 2);
    EXPECT_DOUBLE_EQ(r.mismatch_fraction, 2.0 / 6.0);
    EXPECT_DOUBLE_EQ(r.max_abs_error, 2.0);
    EXPECT_DOUBLE_EQ(r.max_rel_error, 0.25); // 2/8 beats 0.5/2.5
    EXPECT_EQ(r.first_mismatch, 1);
    EXPECT_EQ(r.worst_mismatch, 5);
    EXPECT_NEAR(r.worst_ratio, 2.0 / 0.9, 1e-6);
    EXPECT_EQ(r.message,
              "y: tensors not allclose (atol=0.1, rtol=0.1); max_abs_diff=2 mismatches=2/6 first at [0, 1]");
    EXPECT_NEAR(r.min_passing_atol, 1.2, 1e-6); // 2 - 0.1 * 8
    EXPECT_EQ(r.ref_summary.nan_count, 0);
    EXPECT_DOUBLE_EQ(r.ref_summary.min, 1);
    EXPECT_DOUBLE_EQ(r.ref_summary.max, 6);
    EXPECT_DOUBLE_EQ(r.ref_summary.mean, 3.5);
    EXPECT_DOUBLE_EQ(r.cand_summary.mean, 23.5 / 6);
    EXPECT_FALSE(r.ref_summary.constant);

    // The minimum passing atol is exact: it passes, and the next f32 below it fails.
    const float atol = static_cast<float>(r.min_passing_atol);
    EXPECT_EQ(static_cast<double>(atol), r.min_passing_atol);
    EXPECT_TRUE(compare_tensors(ref, cand, tol(atol, 0.1)).pass);
    EXPECT_FALSE(compare_tensors(ref, cand, tol(std::nextafter(atol, 0.0f), 0.1)).pass);
}

TEST(Compare, MinPassingAtolIsExactUnderCancellation) {
    // d and rtol|c| nearly cancel, so rounding in atol + rtol|c| matters: the bisection finds the
    // exact threshold where a naive d - rtol|c| would be off by far more than one ulp of itself.
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-3, 3);
    std::vector<float> a(300), b(300);
    for (std::size_t i = 0; i < a.size(); ++i) {
        b[i] = u(rng);
        a[i] = b[i] * (1.0f + 0.01f * (i % 2 ? 1 : -1)) + u(rng) * 1e-7f;
    }
    const auto ref = f32({300}, a), cand = f32({300}, b);
    auto r = compare_tensors(ref, cand, tol(0, 0.01));
    ASSERT_GT(r.min_passing_atol, 0);
    const float atol = static_cast<float>(r.min_passing_atol);
    EXPECT_TRUE(compare_tensors(ref, cand, tol(atol, 0.01)).pass);
    EXPECT_FALSE(compare_tensors(ref, cand, tol(std::nextafter(atol, 0.0f), 0.01)).pass);
}

TEST(Compare, MinPassingAtolIsZeroOrInfinite) {
    EXPECT_EQ(compare_tensors(f32({2}, {1, 2}), f32({2}, {1, 2}), {}).min_passing_atol, 0.0);
    auto r = compare_tensors(f32({2}, {1, kNaN}), f32({2}, {1, 2}), {});
    EXPECT_TRUE(std::isinf(r.min_passing_atol));
    EXPECT_TRUE(std::isinf(r.worst_ratio));
    EXPECT_EQ(r.worst_mismatch, 1);
    EXPECT_EQ(r.ref_summary.nan_count, 1);
    EXPECT_DOUBLE_EQ(r.max_abs_error, 0.0); // over elements finite on both sides
}

TEST(Compare, UlpDistanceBf16) {
    const auto ulp = [](std::uint16_t a, std::uint16_t b) {
        return compare_tensors(make<std::uint16_t>(DType::BF16, {1}, {a}),
                               make<std::uint16_t>(DType::BF16, {1}, {b}), {})
            .max_ulp.value();
    };
    EXPECT_EQ(ulp(0x3F80, 0x3F81), 1u);   // 1.0 and the next bf16
    EXPECT_EQ(ulp(0x3F80, 0x3F7F), 1u);   // 1.0 and the previous bf16
    EXPECT_EQ(ulp(0x0000, 0x8000), 0u);   // +0 and -0
    EXPECT_EQ(ulp(0x0001, 0x8001), 2u);   // smallest subnormals either side of zero
    EXPECT_EQ(ulp(0x3F80, 0x4000), 128u); // 1.0 to 2.0: one binade of 7 mantissa bits
}

TEST(Compare, UlpDistanceF32F16AndMixed) {
    const float one = 1.0f, two_up = std::nextafter(std::nextafter(one, 2.0f), 2.0f);
    EXPECT_EQ(compare_tensors(f32({1}, {one}), f32({1}, {two_up}), {}).max_ulp.value(), 2u);
    EXPECT_EQ(
        compare_tensors(f32({2}, {-1.0f, 5}), f32({2}, {-std::nextafter(1.0f, 2.0f), 5}), {}).max_ulp.value(),
        1u);
    // f16 counts in f16 units.
    EXPECT_EQ(compare_tensors(make<std::uint16_t>(DType::F16, {1}, {0x3C00}),
                              make<std::uint16_t>(DType::F16, {1}, {0x3C03}), {})
                  .max_ulp.value(),
              3u);
    // Mixed bf16/f32 counts in f32 units: one f32 step above 1.0.
    EXPECT_EQ(compare_tensors(bf16({1}, {1.0f}), f32({1}, {std::nextafter(1.0f, 2.0f)}), {}).max_ulp.value(),
              1u);
    // Non-finite pairs are left out of the distance.
    EXPECT_EQ(compare_tensors(f32({2}, {kInf, 1.0f}), f32({2}, {kInf, 1.0f}), {}).max_ulp.value(), 0u);
}

TEST(Compare, ErrorMapPoolsASingleBadElement) {
    std::vector<float> a(64, 1.0f), b(64, 1.0f);
    b[5 * 8 + 2] = 3.0f; // row 5, column 2: map cell (2, 1) with 2x2 pooling
    CompareOptions o = tol(0.5, 0);
    o.error_map_max_side = 4;
    auto r = compare_tensors(f32({2, 4, 8}, a), f32({2, 4, 8}, b), o); // leading dims fold: 8 x 8
    const auto& m = r.error_map;
    EXPECT_EQ(m.source_rows, 8);
    EXPECT_EQ(m.source_cols, 8);
    ASSERT_EQ(m.rows, 4);
    ASSERT_EQ(m.cols, 4);
    for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
            EXPECT_FLOAT_EQ(m.ratio[i * 4 + j], (i == 2 && j == 1) ? 4.0f : 0.0f) << i << "," << j;
        }
    }
    EXPECT_EQ(r.first_mismatch, 42);
    EXPECT_NE(r.message.find("first at [1, 1, 2]"), std::string::npos) << r.message;

    // 1-D: one row; a NaN mismatch pools as +inf.
    std::vector<float> c(10, 2.0f), d(10, 2.0f);
    d[9] = kNaN;
    o.error_map_max_side = 4;
    auto one_d = compare_tensors(f32({10}, c), f32({10}, d), o);
    EXPECT_EQ(one_d.error_map.rows, 1);
    EXPECT_EQ(one_d.error_map.cols, 4); // ceil(10 / 3) cells of 3 columns
    EXPECT_TRUE(std::isinf(one_d.error_map.ratio[3]));
    EXPECT_FLOAT_EQ(one_d.error_map.ratio[0], 0.0f);
}

TEST(Compare, ErrorMapWideCells) {
    // 3 x 200 with at most 2 cells a side: cells of 2 rows x 100 columns (pooled row by row).
    std::vector<float> a(600, 1.0f), b(600, 1.0f);
    b[2 * 200 + 150] = 2.0f;  // ratio |1 - 2| / (0.25 + 0) = 4
    b[0 * 200 + 10] = 1.125f; // ratio 0.5, passing
    CompareOptions o = tol(0.25, 0);
    o.error_map_max_side = 2;
    auto r = compare_tensors(f32({3, 200}, a), f32({3, 200}, b), o);
    ASSERT_EQ(r.error_map.rows, 2);
    ASSERT_EQ(r.error_map.cols, 2);
    const std::vector<float> expected = {0.5f, 0.0f, 0.0f, 4.0f};
    EXPECT_EQ(r.error_map.ratio, expected);
    EXPECT_DOUBLE_EQ(r.worst_ratio, 4.0);
}

TEST(Compare, ValueSummaries) {
    auto z = compare_tensors(f32({4}, {0, 0, -0.0f, 0}), f32({4}, {3, 3, 3, 3}), tol(10, 0));
    EXPECT_TRUE(z.pass);
    EXPECT_TRUE(z.ref_summary.all_zero);
    EXPECT_EQ(z.ref_summary.zero_count, 4);
    EXPECT_TRUE(z.ref_summary.constant);
    EXPECT_FALSE(z.cand_summary.all_zero);
    EXPECT_TRUE(z.cand_summary.constant);
    EXPECT_DOUBLE_EQ(z.cand_summary.mean, 3);
    auto n = compare_tensors(f32({4}, {1, kInf, kNaN, 2}), f32({4}, {1, kInf, kNaN, 2}), {});
    EXPECT_EQ(n.ref_summary.inf_count, 1);
    EXPECT_EQ(n.ref_summary.nan_count, 1);
    EXPECT_DOUBLE_EQ(n.ref_summary.mean, 1.5); // finite values only
    EXPECT_FALSE(n.ref_summary.constant);
    EXPECT_EQ(n.mismatch_count, 1); // the NaN
}

// Element-by-element reference implementation of the rule, for cross-checking the streamed one.
struct Naive {
    std::int64_t mismatches = 0, first = -1;
    double max_abs = 0;
};
Naive naive(const Tensor& a, const Tensor& b, float atol, float rtol) {
    Naive n;
    for (std::int64_t i = 0; i < a.numel(); ++i) {
        const float x = a.get_f32(i), y = b.get_f32(i);
        const float d = std::fabs(x - y);
        const bool ok = x == y || (std::isfinite(d) && d <= atol + rtol * std::fabs(y));
        if (!ok) {
            n.first = n.first < 0 ? i : n.first;
            ++n.mismatches;
        }
        if (std::isfinite(x) && std::isfinite(y)) {
            n.max_abs = std::max(n.max_abs, double(d));
        }
    }
    return n;
}

void expect_same(const TensorComparison& x, const TensorComparison& y) {
    EXPECT_EQ(x.pass, y.pass);
    EXPECT_EQ(x.mismatch_count, y.mismatch_count);
    EXPECT_EQ(x.first_mismatch, y.first_mismatch);
    EXPECT_EQ(x.worst_mismatch, y.worst_mismatch);
    EXPECT_EQ(x.max_abs_error, y.max_abs_error);
    EXPECT_EQ(x.max_rel_error, y.max_rel_error);
    EXPECT_EQ(x.worst_ratio, y.worst_ratio);
    EXPECT_EQ(x.min_passing_atol, y.min_passing_atol);
    EXPECT_EQ(x.max_ulp, y.max_ulp);
    EXPECT_EQ(x.ref_summary.mean, y.ref_summary.mean);
    EXPECT_EQ(x.cand_summary.nan_count, y.cand_summary.nan_count);
    EXPECT_EQ(x.error_map.ratio, y.error_map.ratio);
    EXPECT_EQ(x.message, y.message);
}

TEST(Compare, NonContiguousMatchesContiguous) {
    // A [37, 129] bf16 tensor stored transposed ([129, 37] row-major), spanning several chunks.
    const std::int64_t rows = 37, cols = 129;
    std::mt19937 rng(3);
    std::normal_distribution<float> dist;
    auto storage_a = Storage::allocate(rows * cols * 2), storage_b = Storage::allocate(rows * cols * 2);
    for (std::int64_t i = 0; i < rows * cols; ++i) {
        const float v = dist(rng);
        const float w = (i % 97 == 0) ? v + 1.0f : (i == 500 ? kNaN : v * 1.001f);
        const std::uint16_t va = f32_to_bf16(v), vb = f32_to_bf16(w);
        std::memcpy(storage_a->mutable_data() + 2 * i, &va, 2);
        std::memcpy(storage_b->mutable_data() + 2 * i, &vb, 2);
    }
    const Tensor a = Tensor::view(storage_a, DType::BF16, {rows, cols}, {1, rows});
    const Tensor b = Tensor::view(storage_b, DType::BF16, {rows, cols}, {1, rows});
    ASSERT_FALSE(a.is_contiguous());
    CompareOptions o;
    o.error_map_max_side = 16;
    const auto strided = compare_tensors(a, b, o);
    const auto dense = compare_tensors(a.contiguous(), b.contiguous(), o);
    expect_same(strided, dense);
    // Mixed: one side strided, the other contiguous f32.
    Tensor bf = Tensor::zeros(DType::F32, {rows, cols});
    for (std::int64_t i = 0; i < rows * cols; ++i) {
        bf.mutable_data_as<float>()[i] = b.get_f32(i);
    }
    const auto mixed = compare_tensors(a, bf, o);
    EXPECT_EQ(mixed.mismatch_count, dense.mismatch_count);
    EXPECT_EQ(mixed.first_mismatch, dense.first_mismatch);

    const auto n = naive(a, b, 0.01f, 0.01f);
    EXPECT_EQ(dense.mismatch_count, n.mismatches);
    EXPECT_EQ(dense.first_mismatch, n.first);
    EXPECT_EQ(dense.max_abs_error, n.max_abs);
    EXPECT_GT(n.mismatches, 10);
}

TEST(Compare, StreamedAgreesWithNaiveAcrossDtypes) {
    std::mt19937 rng(11);
    std::normal_distribution<float> dist;
    const std::int64_t count = 5003; // not a multiple of the chunk or the vector width
    std::vector<float> a(count), b(count);
    for (std::int64_t i = 0; i < count; ++i) {
        a[i] = dist(rng);
        b[i] = a[i] + dist(rng) * 0.01f;
    }
    a[4100] = kInf;
    b[4200] = kNaN;
    for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::F64, DType::F8E4M3, DType::I32}) {
        Tensor ta = Tensor::zeros(dt, {count}), tb = Tensor::zeros(dt, {count});
        const auto size = dtype_size(dt);
        for (std::int64_t i = 0; i < count; ++i) {
            f64_to_element(dt, a[i] * 3, ta.mutable_data() + i * size);
            f64_to_element(dt, b[i] * 3, tb.mutable_data() + i * size);
        }
        const auto r = compare_tensors(ta, tb, {});
        const auto n = naive(ta, tb, 0.01f, 0.01f);
        EXPECT_EQ(r.mismatch_count, n.mismatches) << dtype_name(dt);
        EXPECT_EQ(r.first_mismatch, n.first) << dtype_name(dt);
        EXPECT_EQ(r.max_abs_error, n.max_abs) << dtype_name(dt);
    }
}

TEST(Compare, F16WideningIsExactForEveryPattern) {
    std::vector<std::uint16_t> halves(65536);
    std::vector<float> floats(65536);
    int nans = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) {
        halves[i] = static_cast<std::uint16_t>(i);
        floats[i] = f16_to_f32(halves[i]);
        nans += std::isnan(floats[i]);
    }
    auto r = compare_tensors(make(DType::F16, {65536}, halves), f32({65536}, floats), tol(0, 0));
    EXPECT_EQ(r.mismatch_count, nans); // only NaNs differ: NaN never matches
    EXPECT_EQ(r.max_abs_error, 0.0);
    EXPECT_EQ(r.max_ulp.value(), 0u);
}

TEST(CompareOutputs, NestedStructureAndValues) {
    OutputSet ref, cand;
    ref.add("output_0", f32({2}, {1, 2}));
    ref.add("output_1", f32({2}, {3, 4}));
    ref.add("output_2.weight", f32({1}, {5}));
    ref.values["output_3"] = "[1024, 1024]";
    ref.values["output_4"] = "null";
    ref.values["output_5"] = "1";
    cand.add("output_2.weight", f32({1}, {9})); // different order, and a bad value
    cand.add("output_0", f32({2}, {1, 2}));
    cand.add("extra", f32({1}, {0}));
    cand.values["output_3"] = "[1024,1024]"; // same value after normalisation
    cand.values["output_4"] = "0";
    cand.values["output_5"] = "1.0"; // numbers compare by value, as Python's ==
    auto r = compare_outputs(ref, cand, {});
    EXPECT_FALSE(r.pass);
    ASSERT_EQ(r.tensors.size(), 2u); // compared in reference order, every one
    EXPECT_EQ(r.tensors[0].name, "output_0");
    EXPECT_TRUE(r.tensors[0].pass);
    EXPECT_EQ(r.tensors[1].name, "output_2.weight");
    EXPECT_FALSE(r.tensors[1].pass);
    const std::vector<std::string> expected = {
        "only in ref: output_1", "output_4: values differ (ref null vs cand 0)", "only in cand: extra"};
    EXPECT_EQ(r.structure_errors, expected);
    EXPECT_EQ(r.first_error, "only in ref: output_1");

    OutputSet same = ref;
    auto ok = compare_outputs(ref, same, {});
    EXPECT_TRUE(ok.pass);
    EXPECT_TRUE(ok.first_error.empty());
    EXPECT_EQ(ok.tensors.size(), 3u);
}

TEST(CompareOutputs, FirstErrorIsFirstTensorFailureInReferenceOrder) {
    OutputSet ref, cand;
    ref.add("output", f32({2}, {1, 2}));
    cand.add("output", f32({2}, {1, 7}));
    auto r = compare_outputs(ref, cand, {});
    EXPECT_FALSE(r.pass);
    EXPECT_TRUE(r.structure_errors.empty());
    EXPECT_EQ(r.first_error,
              "output: tensors not allclose (atol=0.01, rtol=0.01); max_abs_diff=5 mismatches=1/2 "
              "first at [1]");
    OutputSet bad_json;
    bad_json.values["x"] = "{nope";
    OutputSet good;
    good.values["x"] = "1";
    EXPECT_THROW(compare_outputs(good, bad_json, {}), FormatError);
}

} // namespace
} // namespace pkbw
