// Variable-length outputs in the GUI (issue 31): the outputs list and the heatmap say the valid prefix
// and, on a length mismatch, both lengths; the maps cover only the prefix. Built through core's
// comparison, as a run records it.
#include "heatmapview.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/store.h"
#include "qtconvert.h"

#include <QtTest>

using namespace pkbw;
using namespace pkbw::app;

namespace {

Tensor ramp(std::int64_t rows, float shift) {
    Tensor t = Tensor::zeros(DType::F32, {rows, 4});
    float* v = t.mutable_data_as<float>();
    for (std::int64_t i = 0; i < rows * 4; ++i) {
        v[i] = static_cast<float>(i) + (i == 5 ? shift : 0.0f);
    }
    return t;
}

TensorResultRow row_of(std::int64_t ref_rows, std::int64_t cand_rows, float shift) {
    OutputSet ref, cand;
    ref.add("output_1", ramp(ref_rows, 0), OutputLength{64, ref_rows});
    cand.add("output_1", ramp(cand_rows, shift), OutputLength{64, cand_rows});
    return from_comparison(compare_outputs(ref, cand, CompareOptions{}).tensors.at(0));
}

} // namespace

class TestLengths : public QObject {
    Q_OBJECT
private slots:
    void formatsTheLengths() {
        QCOMPARE(format_lengths(std::nullopt, std::nullopt, std::nullopt), QString());
        QCOMPARE(format_lengths(4096, 1039, 1039), QStringLiteral("1039 of 4096 rows"));
        QCOMPARE(format_lengths(4096, 1039, 1056),
                 QStringLiteral("length 1056, the reference's 1039 (bound 4096)"));
        QCOMPARE(format_lengths(4096, 1039, -1),
                 QStringLiteral("length -1, the reference's 1039 (bound 4096)"));
    }

    void aLengthMismatchShowsBothLengths() {
        const TensorResultRow row = row_of(9, 12, 0);
        QVERIFY(!row.pass);
        HeatmapView view;
        view.show_set(heatmaps_from_row(row, 0.01, 0.01));
        const QString text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("length 12, the reference's 9 (bound 64)")), qPrintable(text));
    }

    void equalLengthsMapThePrefixOnly() {
        const Tensor ref = ramp(7, 0), cand = ramp(7, 3.0f);
        HeatmapSet set = compute_heatmaps(ref, cand, 0.01, 0.01, 64);
        set.title = "output_1";
        set.length_bound = 64;
        set.ref_length = set.cand_length = 7;
        QCOMPARE(set.error.numel, std::int64_t{28}); // 7 rows of 4: nothing of the tail
        QCOMPARE(set.error.mismatch_count, std::int64_t{1});
        HeatmapView view;
        view.show_set(set);
        const QString text = view.summary_text();
        QVERIFY2(text.contains(QStringLiteral("(valid prefix: 7 of 64 rows)")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("1 of 28 elements mismatch")), qPrintable(text));
    }
};

QTEST_MAIN(TestLengths)
#include "tst_lengths.moc"
