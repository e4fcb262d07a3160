// The Qt-free helpers behind the views: pooling, error analysis, line diff, fast_p, trace windows.
#include "fixtures.h"
#include "linediff.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/dtype.h"
#include "qtconvert.h"
#include "scoring.h"
#include "tensormaps.h"
#include "timelinewidget.h"
#include "tracedata.h"

#include <QtTest>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

using namespace pkbw;
using namespace pkbw::app;

namespace {

// The heatmap pass written the obvious way, one element at a time, as docs/gui.md describes it:
// the verdict is core's rule in f32; the ratio d / allowed is pinned to 0 for equal elements, to
// (0, 1] for other passing ones and above 1 for failing ones (+inf for a non-finite difference);
// values and the signed difference cand - ref pool to the element of largest magnitude (the positive
// one on a tie), NaN when non-finite; max |diff| is over finite differences, at its lowest index.
struct Reference {
    PooledMap ratio, ref, cand, diff;
    std::int64_t mismatches = 0, first = -1, worst = -1, exact = 0, nonfinite = 0;
    std::int64_t max_diff_index = -1, nonfinite_diffs = 0;
    double worst_ratio = 0, max_abs_diff = 0;
    std::array<std::int64_t, kHistogramBins> histogram{};
};

Reference reference_analysis(const Tensor& ref, const Tensor& cand, double atol, double rtol, int max_side) {
    Reference out;
    const Grid2D g = grid_of(ref.shape());
    PooledMap* maps[4] = {&out.ratio, &out.ref, &out.cand, &out.diff};
    for (PooledMap* m : maps) {
        m->source_rows = g.rows;
        m->source_cols = g.cols;
        m->rows = static_cast<int>(std::min<std::int64_t>(g.rows, max_side));
        m->cols = static_cast<int>(std::min<std::int64_t>(g.cols, max_side));
        m->values.assign(static_cast<std::size_t>(m->rows) * m->cols, 0.0f);
    }
    std::vector<float> mag[3] = {std::vector<float>(out.ref.values.size(), -1.0f),
                                 std::vector<float>(out.ref.values.size(), -1.0f),
                                 std::vector<float>(out.ref.values.size(), -1.0f)};
    const float fatol = static_cast<float>(atol), frtol = static_cast<float>(rtol);
    const float inf = std::numeric_limits<float>::infinity();
    for (std::int64_t i = 0; i < ref.numel(); ++i) {
        const std::int64_t row = i / g.cols, col = i % g.cols;
        const std::size_t cell = static_cast<std::size_t>(row * out.ratio.rows / g.rows * out.ratio.cols +
                                                          col * out.ratio.cols / g.cols);
        const float x = ref.get_f32(i), y = cand.get_f32(i);
        const float xyd[3] = {x, y, y - x};
        for (int s = 0; s < 3; ++s) {
            PooledMap& m = s == 0 ? out.ref : s == 1 ? out.cand : out.diff;
            const float v = xyd[s];
            if (!std::isfinite(v)) {
                ++m.masked_elements;
                mag[s][cell] = inf;
                m.values[cell] = std::nanf("");
            } else if (std::fabs(v) > mag[s][cell] || (std::fabs(v) == mag[s][cell] && v > m.values[cell])) {
                mag[s][cell] = std::fabs(v);
                m.values[cell] = v;
            }
        }
        if (std::isfinite(y - x) && (out.max_diff_index < 0 || std::fabs(y - x) > out.max_abs_diff)) {
            out.max_abs_diff = std::fabs(y - x);
            out.max_diff_index = i;
        }
        const float d = std::fabs(x - y), allowed = fatol + frtol * std::fabs(y);
        const bool fails = !(x == y || (d <= allowed && std::isfinite(d)));
        float ratio;
        if (x == y) {
            ratio = 0;
        } else if (!fails) {
            ratio = std::clamp(d / allowed, 0x1p-125f, 1.0f);
        } else {
            ratio = std::isfinite(d) ? std::max(d / allowed, std::nextafter(1.0f, 2.0f)) : inf;
        }
        if (fails) {
            ++out.mismatches;
            if (out.first < 0) {
                out.first = i;
            }
            if (ratio > out.worst_ratio) {
                out.worst = i;
            }
        }
        out.worst_ratio = std::max(out.worst_ratio, static_cast<double>(ratio));
        float& r = out.ratio.values[cell];
        if (std::isinf(ratio)) {
            ++out.nonfinite;
            r = std::nanf("");
        } else if (!std::isnan(r)) {
            r = std::max(r, ratio);
        }
        if (ratio == 0) {
            ++out.exact;
        } else if (!std::isinf(ratio)) {
            int b = 0; // bin b holds [10^(-8 + b/4), 10^(-8 + (b+1)/4)), the end bins open-ended
            while (b + 1 < kHistogramBins && ratio >= std::pow(10.0, -8.0 + (b + 1) * 0.25)) {
                ++b;
            }
            ++out.histogram[static_cast<std::size_t>(b)];
        }
    }
    out.ratio.masked_elements = out.nonfinite;
    // The difference map counts its masked cells (the elements are nonfinite_diffs).
    out.nonfinite_diffs = std::exchange(out.diff.masked_elements, 0);
    for (float v : out.diff.values) {
        out.diff.masked_elements += std::isnan(v);
    }
    return out;
}

// Random values with errors spread over twelve decades of ratio, NaNs and infinities on either
// side, equal infinities (a match), exact matches and +-v ties in one cell.
void fill_random(Tensor& ref, Tensor& cand, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(-10, 3);
    std::uniform_int_distribution<int> pick(0, 99);
    const std::size_t size = dtype_size(ref.dtype()), cand_size = dtype_size(cand.dtype());
    const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
    for (std::int64_t i = 0; i < ref.numel(); ++i) {
        const double x = normal(rng);
        double y = x + x * std::pow(10.0, uniform(rng)) * (normal(rng) > 0 ? 1 : -1);
        double rx = x;
        switch (pick(rng)) {
        case 0:
            rx = nan;
            break;
        case 1:
            y = nan;
            break;
        case 2:
            rx = y = inf;
            break;
        case 3:
            rx = inf;
            y = -inf;
            break;
        case 4:
            y = inf;
            break;
        case 5:
        case 6:
        case 7:
            y = x;
            break;
        case 8:
            rx = 0;
            y = -0.0;
            break;
        default:
            break;
        }
        f64_to_element(ref.dtype(), rx, ref.mutable_data() + static_cast<std::size_t>(i) * size);
        f64_to_element(cand.dtype(), y, cand.mutable_data() + static_cast<std::size_t>(i) * cand_size);
    }
    if (ref.numel() > 3) { // a tie of magnitudes in one cell: the positive one is kept
        f64_to_element(ref.dtype(), -1000, ref.mutable_data());
        f64_to_element(ref.dtype(), 1000, ref.mutable_data() + size);
    }
}

bool same_map(const PooledMap& a, const PooledMap& b) {
    if (a.rows != b.rows || a.cols != b.cols || a.source_rows != b.source_rows ||
        a.source_cols != b.source_cols || a.masked_elements != b.masked_elements) {
        return false;
    }
    for (std::size_t i = 0; i < a.values.size(); ++i) {
        const float x = a.values[i], y = b.values[i];
        if (!(x == y || (std::isnan(x) && std::isnan(y)))) {
            qWarning("cell %zu of %dx%d: %.9g != %.9g", i, a.rows, a.cols, double(x), double(y));
            return false;
        }
    }
    return true;
}

} // namespace

class TestHelpers : public QObject {
    Q_OBJECT
private slots:
    void pool_keeps_largest_magnitude() {
        // 4x4 iota pooled to 2x2: each cell holds its 2x2 block's largest value.
        Tensor t = test::iota_4x4();
        t.mutable_data_as<float>()[0] = -20; // the largest magnitude of block (0,0), negative
        const PooledMap m = pool_values(t, 2);
        QCOMPARE(m.rows, 2);
        QCOMPARE(m.cols, 2);
        QCOMPARE(m.at(0, 0), -20.0f);
        QCOMPARE(m.at(0, 1), 7.0f);
        QCOMPARE(m.at(1, 0), 13.0f);
        QCOMPARE(m.at(1, 1), 15.0f);
        QCOMPARE(m.masked_elements, qint64(0));
    }
    void pool_masks_non_finite() {
        const PooledMap m = pool_values(test::perturbed_4x4(), 2);
        QVERIFY(std::isnan(m.at(1, 1))); // [2,3] is NaN
        QCOMPARE(m.masked_elements, qint64(1));
        QCOMPARE(m.at(0, 0), 5.0f);
    }
    void error_analysis_matches_hand_values() {
        const ErrorAnalysis a = analyse_error(test::iota_4x4(), test::perturbed_4x4(), 0.01, 0, 4);
        QCOMPARE(a.numel, qint64(16));
        QCOMPARE(a.mismatch_count, qint64(3));
        QCOMPARE(a.first_mismatch, qint64(1));
        QCOMPARE(a.worst_mismatch, qint64(11)); // the NaN: ratio +inf
        QVERIFY(std::isinf(a.worst_ratio));
        QCOMPARE(a.nonfinite_mismatches, qint64(1));
        QCOMPARE(a.exact_count, qint64(13));
        QVERIFY(std::fabs(a.ratio.at(0, 1) - 50.0f) < 1e-3f);
        QVERIFY(std::fabs(a.ratio.at(3, 0) - 4.0f) < 2e-3f); // 12.04f - 12 is not exactly 0.04
        QVERIFY(std::isnan(a.ratio.at(2, 3)));
        // log10(50) = 1.7 and log10(4) = 0.6 fall in bins 38 and 34 of [-8, 4) in 48 bins.
        QCOMPARE(a.histogram[38], qint64(1));
        QCOMPARE(a.histogram[34], qint64(1));
    }
    void one_pass_value_maps_equal_pool_values() {
        PooledMap r, c;
        const ErrorAnalysis a = analyse_error(test::iota_4x4(), test::perturbed_4x4(), 0.01, 0, 2, &r, &c);
        const PooledMap pr = pool_values(test::iota_4x4(), 2), pc = pool_values(test::perturbed_4x4(), 2);
        QCOMPARE(a.mismatch_count, qint64(3));
        QCOMPARE(r.values, pr.values);
        QCOMPARE(c.masked_elements, qint64(1));
        QCOMPARE(c.at(0, 0), pc.at(0, 0));
        QVERIFY(std::isnan(c.at(1, 1)));
    }
    void error_analysis_rtol_scales_with_candidate() {
        Tensor ref = Tensor::zeros(DType::F32, {1, 2}), cand = Tensor::zeros(DType::F32, {1, 2});
        ref.mutable_data_as<float>()[0] = 100;
        cand.mutable_data_as<float>()[0] = 101; // |diff| 1 <= 0 + 0.01 * 101
        ref.mutable_data_as<float>()[1] = 101.5f;
        cand.mutable_data_as<float>()[1] = 100; // |diff| 1.5 > 0.01 * 100
        const ErrorAnalysis a = analyse_error(ref, cand, 0, 0.01, 8);
        QCOMPARE(a.mismatch_count, qint64(1));
        QCOMPARE(a.first_mismatch, qint64(1));
    }
    void large_tensor_pools_to_max_side() {
        Tensor t = Tensor::zeros(DType::BF16, {2048, 3000});
        const PooledMap m = pool_values(t, 512);
        QCOMPARE(m.rows, 512);
        QCOMPARE(m.cols, 512);
        QCOMPARE(m.source_cols, qint64(3000));
        const CellPos p = locate(m, 2047LL * 3000 + 2999);
        QCOMPARE(p.map_row, 511);
        QCOMPARE(p.map_col, 511);
    }
    void fast_path_matches_per_element_reference_data() {
        QTest::addColumn<int>("dtype");
        QTest::addColumn<int>("cand_dtype");
        QTest::addColumn<QList<qint64>>("shape");
        QTest::addColumn<int>("max_side");
        const int f32 = static_cast<int>(DType::F32), bf16 = static_cast<int>(DType::BF16),
                  f16 = static_cast<int>(DType::F16);
        // Several column chunks, a ragged last vector, cells of uneven width.
        QTest::newRow("f32 37x1100 to 16") << f32 << f32 << QList<qint64>{37, 1100} << 16;
        QTest::newRow("bf16 5x41x300 to 64") << bf16 << bf16 << QList<qint64>{5, 41, 300} << 64;
        QTest::newRow("bf16 unpooled 19x77") << bf16 << bf16 << QList<qint64>{19, 77} << 512;
        QTest::newRow("f16 (converted) 64x130 to 32") << f16 << f16 << QList<qint64>{64, 130} << 32;
        QTest::newRow("f32 vs bf16 (converted) 50x70 to 8") << f32 << bf16 << QList<qint64>{50, 70} << 8;
        // Over 2^20 elements: split over threads.
        QTest::newRow("f32 1100x1000 to 100, threads") << f32 << f32 << QList<qint64>{1100, 1000} << 100;
        QTest::newRow("bf16 1030x1031 to 512, threads") << bf16 << bf16 << QList<qint64>{1030, 1031} << 512;
    }
    void fast_path_matches_per_element_reference() {
        QFETCH(int, dtype);
        QFETCH(int, cand_dtype);
        QFETCH(QList<qint64>, shape);
        QFETCH(int, max_side);
        const Shape s(shape.begin(), shape.end());
        Tensor ref = Tensor::zeros(static_cast<DType>(dtype), s),
               cand = Tensor::zeros(static_cast<DType>(cand_dtype), s);
        fill_random(ref, cand, 7);
        for (const auto [atol, rtol] : {std::pair{1e-2, 1e-2}, std::pair{1e-5, 0.0}, std::pair{0.0, 0.1}}) {
            PooledMap r, c;
            const ErrorAnalysis a = analyse_error(ref, cand, atol, rtol, max_side, &r, &c);
            const Reference want = reference_analysis(ref, cand, atol, rtol, max_side);
            QVERIFY(want.mismatches > 0 && want.exact > 0 && want.nonfinite > 0 &&
                    want.ref.masked_elements > 0);
            QCOMPARE(a.mismatch_count, want.mismatches);
            QCOMPARE(a.first_mismatch, want.first);
            QCOMPARE(a.worst_mismatch, want.worst);
            QCOMPARE(a.worst_ratio, want.worst_ratio);
            QCOMPARE(a.exact_count, want.exact);
            QCOMPARE(a.nonfinite_mismatches, want.nonfinite);
            for (int b = 0; b < kHistogramBins; ++b) {
                QCOMPARE(a.histogram[static_cast<std::size_t>(b)],
                         want.histogram[static_cast<std::size_t>(b)]);
            }
            QVERIFY(same_map(a.ratio, want.ratio));
            QVERIFY(same_map(r, want.ref));
            QVERIFY(same_map(c, want.cand));
            // The signed difference map comes from the same pass (no second read of the tensors).
            QVERIFY(same_map(a.diff, want.diff));
            QVERIFY(want.nonfinite_diffs > 0);
            QCOMPARE(a.nonfinite_diffs, want.nonfinite_diffs);
            QCOMPARE(a.max_abs_diff, want.max_abs_diff);
            QCOMPARE(a.max_diff_index, want.max_diff_index);
            QVERIFY(same_map(pool_values(ref, max_side), want.ref));
            QVERIFY(same_map(pool_values(cand, max_side), want.cand));
            // ratio > 1 is core's verdict: the same mismatches, the same first.
            CompareOptions o;
            o.atol = atol;
            o.rtol = rtol;
            const TensorComparison core = compare_tensors(ref, cand, o);
            QCOMPARE(a.mismatch_count, core.mismatch_count);
            QCOMPARE(a.first_mismatch, core.first_mismatch);
        }
    }
    void f16_conversion_is_exact() {
        // Every f16 pattern, unpooled: the fast conversion gives core's f16_to_f32 (NaN masked).
        Tensor t = Tensor::zeros(DType::F16, {256, 256});
        auto* bits = t.mutable_data_as<std::uint16_t>();
        for (int i = 0; i < 65536; ++i) {
            bits[i] = static_cast<std::uint16_t>(i);
        }
        const PooledMap m = pool_values(t, 256);
        std::int64_t nonfinite = 0;
        for (int i = 0; i < 65536; ++i) {
            const float want = f16_to_f32(static_cast<std::uint16_t>(i));
            const float got = m.values[static_cast<std::size_t>(i)];
            if (!std::isfinite(want)) {
                ++nonfinite;
                QVERIFY(std::isnan(got));
            } else {
                QVERIFY2(std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want),
                         qPrintable(QString::number(i)));
            }
        }
        QCOMPARE(nonfinite, qint64(2 * 1024)); // exponent 31: 2 signs x 1024 mantissas
        QCOMPARE(m.masked_elements, nonfinite);
    }
    void cell_text_contrasts_with_its_colour() {
        // NaN/Inf failures get the darkest red (value 0.6): white text; passes are light: black.
        const double inf = std::numeric_limits<double>::infinity();
        QCOMPARE(text_color_on(ratio_color(false, inf)), QColor(Qt::white));
        QCOMPARE(text_color_on(ratio_color(true, 0.0)), QColor(Qt::black));
        QCOMPARE(text_color_on(ratio_color(true, 1.0)), QColor(Qt::black));
        QCOMPARE(text_color_on(not_run_color()), QColor(Qt::black));
    }
    // Review point 11: a selection's times read with three decimals in every unit, as the trace
    // summary prints them ("44.9995 µs" beside "45.000 µs" was the defect).
    void selection_times_have_three_decimals() {
        QCOMPARE(format_us(44.9996), QStringLiteral("45.000 µs"));
        QCOMPARE(format_us(1234.5678), QStringLiteral("1.235 ms"));
        QCOMPARE(format_us(2.5e6), QStringLiteral("2.500 s"));
        QCOMPARE(format_us(0.0), QStringLiteral("0.000 µs"));
    }

    void grid_ratios_fit_their_cells() {
        // The review saw "8...." for a worst ratio of 8.32e+04 in a 52-px cell.
        QCOMPARE(format_ratio_compact(8.32e4), QStringLiteral("8.3e4"));
        QCOMPARE(format_ratio_compact(1.5e12), QStringLiteral("1.5e12"));
        QCOMPARE(format_ratio_compact(0.75), format_ratio(0.75));
        QCOMPARE(format_ratio_compact(999.0), format_ratio(999.0));
        QCOMPARE(format_ratio_compact(std::numeric_limits<double>::infinity()), QStringLiteral("inf"));
        for (double r : {1e3, 2.5e4, 8.32e4, 9.99e5, 3e8, 1e100}) {
            QVERIFY2(format_ratio_compact(r).size() <= 6, qPrintable(format_ratio_compact(r)));
        }
    }
    void line_diff_is_minimal() {
        const auto a = split_lines("a\nb\nc\nd\n"), b = split_lines("a\nc\nd\ne\n");
        const auto d = diff_lines(a, b);
        int ins = 0, del = 0, eq = 0;
        for (const auto& l : d) {
            (l.op == DiffOp::Insert ? ins : l.op == DiffOp::Delete ? del : eq)++;
        }
        QCOMPARE(del, 1);
        QCOMPARE(ins, 1);
        QCOMPARE(eq, 3);
        QCOMPARE(d[1].op, DiffOp::Delete);
        QCOMPARE(d[1].left, 1);
        QCOMPARE(d.back().op, DiffOp::Insert);
        QCOMPARE(d.back().right, 3);
        QVERIFY(diff_lines({}, {}).empty());
        QCOMPARE(diff_lines({}, b).size(), std::size_t(4));
    }
    void fast_p_and_geomean() {
        // Results stored without an interval (ci_low absent): their speedup alone decides.
        const std::vector<ScoredResult> r{{true, 2.0, std::nullopt},
                                          {true, 0.5, std::nullopt},
                                          {false, 3.0, std::nullopt},
                                          {true, std::nullopt, std::nullopt}};
        QCOMPARE(fast_p(r, 0.0), 0.75); // p = 0: the correct share (core's rule, the Sweeps tab's)
        QCOMPARE(fast_p(r, 1.0), 0.25); // only the 2x one
        QCOMPARE(fast_p(r, 2.0), 0.0);
        QVERIFY(std::fabs(*geomean_speedup(r) - 1.0) < 1e-12); // sqrt(2 * 0.5)
        // fast_0 at p = 0 alone; just above 0 the correct result without a speedup drops out.
        const auto curve = fast_p_curve(r);
        QCOMPARE(curve.size(), std::size_t(4));
        QCOMPARE(curve[0], std::make_pair(0.0, 0.75));
        QCOMPARE(curve[1], std::make_pair(0.0, 0.5));
        QCOMPARE(curve[2], std::make_pair(0.5, 0.25));
        QCOMPARE(curve[3], std::make_pair(2.0, 0.0));
        QVERIFY(!geomean_speedup({{false, 2.0, std::nullopt}}).has_value());
    }
    // fast_p's rule is core's (counts_toward_fast_p): with a stored interval a result counts as faster
    // than p only when the interval clears p. 1.3x reaching down to 0.98 is not faster than 1.
    void fast_p_needs_the_interval_to_clear_p() {
        const std::vector<ScoredResult> r{{true, 1.3, 0.98}, {true, 1.3, 1.02}};
        QCOMPARE(fast_p(r, 0.0), 1.0);
        QCOMPARE(fast_p(r, 1.0), 0.5); // only the one whose interval starts at 1.02
        QCOMPARE(fast_p(r, 1.02), 0.0);
        QCOMPARE(fast_p(r, 0.97), 1.0);
        QCOMPARE(fast_p({{true, 1.3, 0.98}}, 1.0), 0.0);
        QCOMPARE(fast_p({{true, 1.3, 1.02}}, 1.0), 1.0);
        // The curve steps at each interval's low end, not at the speedups.
        const auto curve = fast_p_curve(r);
        QCOMPARE(curve.size(), std::size_t(4));
        QCOMPARE(curve[0], std::make_pair(0.0, 1.0));
        QCOMPARE(curve[1], std::make_pair(0.0, 1.0));
        QCOMPARE(curve[2], std::make_pair(0.98, 0.5));
        QCOMPARE(curve[3], std::make_pair(1.02, 0.0));
        // The geometric mean is still over the speedups.
        QVERIFY(std::fabs(*geomean_speedup(r) - 1.3) < 1e-12);
    }
    void trace_visible_window() {
        TimelineData d;
        TimelineLane lane;
        lane.events = {{0, 10, 0}, {5, 100, 0}, {200, 1, 0}, {300, 5, 0}};
        d.lanes.push_back(lane);
        d.names = {"k"};
        d.finish();
        QCOMPARE(d.begin_us, 0.0);
        QCOMPARE(d.end_us, 305.0);
        const auto [a, b] = d.visible(d.lanes[0], 50, 250); // the long event and the one at 200
        QCOMPARE(a, std::size_t(1));
        QCOMPARE(b, std::size_t(3));
        const TimelineData s = synthetic_trace(2, 3, 1000);
        QCOMPARE(s.event_count(), std::size_t(6000));
        QCOMPARE(s.lanes.size(), std::size_t(6));
    }
};

QTEST_GUILESS_MAIN(TestHelpers)
#include "tst_helpers.moc"
