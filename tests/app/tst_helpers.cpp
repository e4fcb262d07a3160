// The Qt-free helpers behind the views: pooling, error analysis, line diff, fast_p, trace windows.
#include "fixtures.h"
#include "linediff.h"
#include "scoring.h"
#include "tensormaps.h"
#include "tracedata.h"

#include <QtTest>
#include <cmath>

using namespace pkbw;
using namespace pkbw::app;

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
        const std::vector<ScoredResult> r{{true, 2.0}, {true, 0.5}, {false, 3.0}, {true, std::nullopt}};
        QCOMPARE(fast_p(r, 0.0), 0.5);  // two correct with a speedup
        QCOMPARE(fast_p(r, 1.0), 0.25); // only the 2x one
        QCOMPARE(fast_p(r, 2.0), 0.0);
        QVERIFY(std::fabs(*geomean_speedup(r) - 1.0) < 1e-12); // sqrt(2 * 0.5)
        const auto curve = fast_p_curve(r);
        QCOMPARE(curve.size(), std::size_t(3));
        QCOMPARE(curve[1].first, 0.5);
        QCOMPARE(curve[1].second, 0.25);
        QVERIFY(!geomean_speedup({{false, 2.0}}).has_value());
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
