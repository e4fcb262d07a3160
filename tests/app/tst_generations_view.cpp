// The Generations tab: the matrix over every problem, the per-generation table and charts as the paper
// counts them (fixed denominator, PKB's speedups, infrastructure errors never a result), its header
// on stores of many problems, and charts whose labels stay inside them.
#include "fixtures.h"
#include "generationsview.h"
#include "pkbw/core/store.h"

#include <QScrollBar>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>
#include <algorithm>
#include <qcustomplot.h>

using namespace pkbw;
using namespace pkbw::app;
using test::add_run;

class TestGenerationsView : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test")); }

    void generations_are_paper_grade() {
        const QString path = test::temp_path(QStringLiteral("papers.db"));
        const std::string g1 = "solutions_cuda_bf16_h100_anthropic_claude-opus-4-7",
                          g2 = "solutions_cuda_bf16_h100_openai_gpt-5.5";
        std::int64_t older_pass = 0, newer_mismatch = 0, pass_before_error = 0;
        {
            Store store = Store::open(path.toStdString());
            add_run(store, "calibrate", "", RunMode::Perf, RunStatus::Pass, 1.0, 1);
            add_run(store, "1_allreduce", "cuda", RunMode::Perf, RunStatus::Pass, 3.0, 2); // ad hoc
            add_run(store, "12_allgather_gemm", g1, RunMode::Perf, RunStatus::Pass, 0.5, 3);
            older_pass = add_run(store, "2_allgather", g1, RunMode::Perf, RunStatus::Pass, 1.5, 4);
            newer_mismatch =
                add_run(store, "2_allgather", g1, RunMode::Perf, RunStatus::Mismatch, std::nullopt, 5);
            pass_before_error = add_run(store, "1_allreduce", g1, RunMode::Perf, RunStatus::Pass, 2.0, 6);
            add_run(store, "1_allreduce", g1, RunMode::Perf, RunStatus::Error, std::nullopt, 7); // infra
            add_run(store, "2_allgather", g2, RunMode::Perf, RunStatus::Error, std::nullopt, 8);
            add_run(store, "12_allgather_gemm", g2, RunMode::Eval, RunStatus::Pass, 1.25, 9, "pkb-cuda",
                    "pkb_speedup");
        }
        const GenerationMatrix m = load_generation_matrix(Store::open_read_only(path.toStdString()));
        QCOMPARE(m.problems, (std::vector<std::string>{"1_allreduce", "2_allgather", "12_allgather_gemm"}));
        QCOMPARE(m.short_labels, (std::vector<std::string>{"anthropic/claude-opus-4-7", "openai/gpt-5.5"}));
        QCOMPARE(m.left_out_calibration, 1);
        QCOMPARE(m.left_out_adhoc, 1);
        // An infrastructure error never stands in for the pass before it.
        QCOMPARE(m.cells.at({0, 0}).run_id, pass_before_error);
        QCOMPARE(m.cells.at({0, 0}).infra_errors, 1);
        // The latest result is the mismatch, and an older run's speedup does not stand in.
        QCOMPARE(m.cells.at({0, 1}).run_id, newer_mismatch);
        QVERIFY(!m.cells.at({0, 1}).speedup);
        QVERIFY(!m.cells.at({1, 1}).result);
        // PKB's speedup for the imported run.
        QCOMPARE(*m.cells.at({1, 2}).speedup, 1.25);
        QCOMPARE(QString::fromStdString(m.cells.at({1, 2}).speedup_source), QStringLiteral("PKB"));
        const GenerationStats s1 = m.stats_of(0), s2 = m.stats_of(1);
        QCOMPARE(s1.attempted, 3);
        QCOMPARE(s1.correct, 2);
        QCOMPARE(s1.fast_1, 1);
        QCOMPARE(s1.geomean_n, 2);
        QVERIFY(std::fabs(*s1.geomean - 1.0) < 1e-9);
        QCOMPARE(s2.attempted, 1);
        QCOMPARE(s2.infra_only, 1);
        QCOMPARE(s2.geomean_n, 1);
        QCOMPARE(fast_p(m.results_of(1), 1.0), 1.0 / 3.0); // over the fixed 3 problems

        const GenerationMatrix best =
            load_generation_matrix(Store::open_read_only(path.toStdString()), CellPick::Best);
        QCOMPARE(best.cells.at({0, 1}).run_id, older_pass);
        QCOMPARE(*best.cells.at({0, 1}).speedup, 1.5);

        GenerationsView view;
        QSignalSpy loaded(&view, &GenerationsView::loaded);
        view.set_store(path);
        QVERIFY(loaded.wait(5000));
        QCOMPARE(view.model()->headerData(2, Qt::Horizontal, Qt::DisplayRole).toString(),
                 QStringLiteral("12_allgather_gemm"));
        QCOMPARE(view.stats_table()->item(0, 1)->text(), QStringLiteral("3 / 3"));
        QCOMPARE(view.stats_table()->item(0, 5)->text(), QStringLiteral("2"));
        QVERIFY(view.status_text().contains(QStringLiteral("1 calibration")));
        QCOMPARE(view.model()->index(1, 2).data().toString(), QStringLiteral("pass 1.25× (no interval) PKB"));
        QCOMPARE(view.model()->index(1, 1).data().toString(), QStringLiteral("no result (error)"));
    }

    // Review point 25: at 1500 px the review's seven problems (31_fused_moe_fwd and
    // 32_fused_moe_fwd_lora last) were behind a scrollbar while the table beside them was half empty.
    // Every problem column now lies inside the matrix's viewport, and the per-generation table whole.
    void generations_matrix_shows_every_problem() {
        const QString path = test::temp_path(QStringLiteral("generations-wide.db"));
        QFile::remove(path);
        {
            Store store = Store::open(path.toStdString());
            const char* problems[] = {
                "2_allgather",          "12_allgather_gemm",         "13_gemm_allreduce",
                "18_tp_rms_norm",       "20_blocked_fp8_dequantize", "31_fused_moe_fwd",
                "32_fused_moe_fwd_lora"};
            const char* generations[] = {"solutions_cuda_bf16_h200_2_anthropic_claude-opus-4-7",
                                         "solutions_cuda_bf16_h200_2_samples_baseline",
                                         "solutions_cuda_bf16_h200_2_samples_tuned"};
            int second = 0;
            for (const char* g : generations) {
                for (const char* p : problems) {
                    test::add_run(store, p, g, RunMode::Perf, RunStatus::Pass, 1.25, second++ % 60);
                }
            }
        }
        {
            GenerationsView view;
            view.resize(1500, 950);
            view.show();
            QVERIFY(QTest::qWaitForWindowExposed(&view));
            QSignalSpy loaded(&view, &GenerationsView::loaded);
            view.set_store(path);
            QVERIFY(loaded.wait(5000));
            QTableView* matrix = view.matrix_view();
            QCOMPARE(matrix->model()->columnCount(), 7);
            QTRY_VERIFY_WITH_TIMEOUT(matrix->columnViewportPosition(6) + matrix->columnWidth(6) <=
                                         matrix->viewport()->width(),
                                     5000);
            QCOMPARE(matrix->horizontalScrollBar()->maximum(), 0);
            QCOMPARE(view.stats_table()->horizontalScrollBar()->maximum(), 0);
            QCOMPARE(matrix->model()->headerData(6, Qt::Horizontal, Qt::ToolTipRole).toString(),
                     QStringLiteral("32_fused_moe_fwd_lora"));
            // The charts below keep their share when the tables are laid out again.
            QVERIFY2(view.fast_p_plot()->height() > view.height() / 4,
                     qPrintable(QString::number(view.fast_p_plot()->height())));
            view.resize(900, 950); // the table under the matrix now, the charts still readable
            QCoreApplication::processEvents();
            QVERIFY2(view.fast_p_plot()->height() > view.height() / 4,
                     qPrintable(QString::number(view.fast_p_plot()->height())));
        }
    }

    void header_names_a_dozen_problems_and_more_on_hover() {
        // A sweep of PKB's solutions spans 82 problems: named in the header they filled a third of a
        // laptop's screen. Up to 12 are named there; more are on hover.
        for (const int count : {12, 13}) {
            const QString path = test::temp_path(QStringLiteral("header%1.db").arg(count));
            QStringList names;
            {
                Store store = Store::open(path.toStdString());
                for (int i = 1; i <= count; ++i) {
                    const std::string stem = std::to_string(i) + "_problem";
                    names << QString::fromStdString(stem);
                    test::add_run(store, stem, "solutions_cuda_bf16_none_meta_model", RunMode::Eval,
                                  RunStatus::Pass, std::nullopt, i);
                }
            }
            GenerationsView view;
            QSignalSpy loaded(&view, &GenerationsView::loaded);
            view.set_store(path);
            QVERIFY(loaded.wait(5000));
            const QString all = names.join(QStringLiteral(", "));
            QVERIFY(view.status_text().contains(QStringLiteral("%1 problems").arg(count)));
            if (count <= 12) {
                QVERIFY2(view.status_text().contains(all), qPrintable(view.status_text()));
                QVERIFY(view.status_tooltip().isEmpty());
            } else {
                QVERIFY2(!view.status_text().contains(QStringLiteral("13_problem")),
                         qPrintable(view.status_text()));
                QVERIFY(view.status_text().contains(QStringLiteral("listed on hover")));
                QCOMPARE(view.status_tooltip(), all);
            }
        }
    }

    void geomean_bar_labels_fit() {
        // A long generation name, speedups 10x and 0.1x, and a generation with no correct result:
        // every bar label and generation name lies inside the chart.
        const QString path = test::temp_path(QStringLiteral("geomean.db"));
        const std::string long_name = "solutions_cuda_bf16_none_anthropic_a-very-long-model-name-that-goes-"
                                      "on-and-on-and-on-2025-preview";
        {
            Store store = Store::open(path.toStdString());
            test::add_perf_run(store, "1_allreduce", long_name, 10.0, 1.0);
            test::add_perf_run(store, "1_allreduce", "solutions_cuda_bf16_none_openai_slow", 1.0, 10.0);
            test::add_eval_run(store, test::temp_path(QStringLiteral("geomean_runs")).toStdString(),
                               "2_allgather", "solutions_cuda_bf16_none_google_broken");
            test::add_run(store, "2_allgather", "solutions_cuda_bf16_none_meta_untimed", RunMode::Eval,
                          RunStatus::Pass, std::nullopt, 0);
        }
        GenerationsView view;
        view.resize(900, 700);
        view.show();
        QSignalSpy loaded(&view, &GenerationsView::loaded);
        view.set_store(path);
        QVERIFY(loaded.wait(5000));
        QCustomPlot* plot = view.geomean_plot();
        plot->replot(QCustomPlot::rpImmediateRefresh);
        QStringList texts;
        for (int i = 0; i < plot->itemCount(); ++i) {
            if (auto* label = qobject_cast<QCPItemText*>(plot->item(i))) {
                texts << label->text();
                const QPointF at = label->position->pixelPosition();
                const int width = QFontMetrics(label->font()).horizontalAdvance(label->text()) + 4;
                QVERIFY2(at.x() >= 0 && at.x() + width <= plot->width(), qPrintable(label->text()));
                QVERIFY(at.y() > 0 && at.y() < plot->height());
            }
        }
        texts.sort();
        // A generation whose correct results were never timed (an eval sweep) says so.
        QCOMPARE(texts,
                 (QStringList{QStringLiteral("0.10× (n=1)"), QStringLiteral("10.00× (n=1)"),
                              QStringLiteral("no correct result"), QStringLiteral("untimed: 1 correct")}));
        // Generation names: level, elided in the middle, and the left margin holds the longest.
        const QFontMetrics metrics(plot->yAxis->tickLabelFont());
        auto* ticker = dynamic_cast<QCPAxisTickerText*>(plot->yAxis->ticker().data());
        QVERIFY(ticker);
        QCOMPARE(ticker->ticks().size(), 4);
        for (const QString& name : ticker->ticks()) {
            QVERIFY2(metrics.horizontalAdvance(name) < plot->axisRect()->left(), qPrintable(name));
        }
        QVERIFY(ticker->ticks().values().contains(QStringLiteral("openai/slow")));
        QVERIFY(std::any_of(ticker->ticks().begin(), ticker->ticks().end(), [](const QString& n) {
            return n.startsWith(QStringLiteral("anthropic/a-very")) && // the short label, elided
                   n.endsWith(QStringLiteral("-2025-preview")) && n.contains(QChar(0x2026));
        }));
    }
};

QTEST_MAIN(TestGenerationsView)
#include "tst_generations_view.moc"
