// Each view opens a fixture run and shows the expected numbers; the main window starts on a missing
// store; exports write files.
#include "correctnessmodel.h"
#include "cudahighlighter.h"
#include "exporting.h"
#include "fixtures.h"
#include "generationsview.h"
#include "heatmapview.h"
#include "mainwindow.h"
#include "perfview.h"
#include "problembrowser.h"
#include "runsbrowser.h"
#include "runsmodel.h"
#include "runview.h"
#include "sourceview.h"
#include "timelinewidget.h"
#include "tolerancemodel.h"

#include <QMenu>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSvgRenderer>
#include <QTableView>
#include <QTableWidget>
#include <QTextDocument>
#include <QTextLayout>
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <qcustomplot.h>

using namespace pkbw;
using namespace pkbw::app;

class TestViews : public QObject {
    Q_OBJECT
    QString store_;
    test::FixtureRun eval_;
    std::int64_t perf_id_ = 0;

private slots:
    // PKB's Python sources get Python's highlighting (the review found def, None and in plain and
    // "using" in a docstring bold); C++ and CUDA keep theirs.
    void python_sources_are_highlighted_as_python() {
        QCOMPARE(source_language(QStringLiteral("/x/2_allgather_cuda.py (sha256 ab12)")),
                 SourceLanguage::Python);
        QCOMPARE(source_language(QStringLiteral("/x/reference/1_allreduce.py")), SourceLanguage::Python);
        QCOMPARE(source_language(QStringLiteral("/x/1_allreduce_cuda.cu")), SourceLanguage::Cpp);
        QCOMPARE(source_language(QStringLiteral("/x/a.pyx.cpp")), SourceLanguage::Cpp);
        QTextDocument doc;
        doc.setPlainText(
            QStringLiteral("def solution(x):\n    \"\"\"Docstring using\n    return None\n    \"\"\"\n"
                           "    return x  # using\n"));
        CudaHighlighter highlighter(&doc, false, SourceLanguage::Python);
        highlighter.rehighlight();
        // The format covering column `column` of line `line`.
        auto format_at = [&](int line, int column) {
            for (const auto& range : doc.findBlockByNumber(line).layout()->formats()) {
                if (column >= range.start && column < range.start + range.length) {
                    return range.format;
                }
            }
            return QTextCharFormat();
        };
        QCOMPARE(format_at(0, 0).fontWeight(), static_cast<int>(QFont::Bold)); // def
        const QColor string = format_at(1, 4).foreground().color();            // the docstring's quotes
        QVERIFY(string.isValid());
        QCOMPARE(format_at(1, 15).foreground().color(), string); // "using" inside it
        QVERIFY(format_at(1, 15).fontWeight() != static_cast<int>(QFont::Bold));
        QCOMPARE(format_at(2, 4).foreground().color(), string);                // "return None" inside it
        QCOMPARE(format_at(4, 4).fontWeight(), static_cast<int>(QFont::Bold)); // return, after it closed
        QVERIFY(format_at(4, 17).fontItalic());                                // # using: a comment
        // The same text as C++: no Python keyword is bold ("def" is no C++ word).
        QTextDocument cpp;
        cpp.setPlainText(QStringLiteral("def solution(x):\n"));
        CudaHighlighter cpp_highlighter(&cpp, false, SourceLanguage::Cpp);
        cpp_highlighter.rehighlight();
        bool bold = false;
        for (const auto& range : cpp.firstBlock().layout()->formats()) {
            bold = bold || (range.start == 0 && range.format.fontWeight() == QFont::Bold);
        }
        QVERIFY(!bold);
    }
    void initTestCase() {
        QCoreApplication::setOrganizationName(QStringLiteral("pkbw-test"));
        store_ = test::temp_path(QStringLiteral("views.db"));
        Store store = Store::open(store_.toStdString());
        eval_ = test::add_eval_run(store, test::temp_path(QStringLiteral("views_runs")).toStdString());
        perf_id_ =
            test::add_perf_run(store, "2_allgather", "solutions_cuda_bf16_none_anthropic_claude", 2.0, 1.0);
    }

    void run_view_lists_a_failure_after_the_last_trial_result() {
        const QString path = test::temp_path(QStringLiteral("after_last.db"));
        std::int64_t id = 0;
        {
            Store store = Store::open(path.toStdString());
            RunRecord run = test::perf_run_record("1_allreduce");
            run.trials = 1;
            id = store.begin_run(run);
            for (int rank = 0; rank < 2; ++rank) {
                RankResultRow row;
                row.run_id = id;
                row.rank = rank;
                row.phase = "compare";
                store.add_rank_result(row);
            }
            RankResultRow crash;
            crash.run_id = id;
            crash.trial = kAfterLastResult;
            crash.rank = 1;
            crash.outcome = RankOutcome::Crash;
            crash.phase = "perf";
            store.add_rank_result(crash);
            store.finish_run(id, RunStatus::Crash, 1, "rank 1 crashed with SIGSEGV in phase perf");
        }
        RunView view;
        view.set_store(path);
        QSignalSpy loaded(&view, &RunView::run_loaded);
        view.open_run(id);
        QVERIFY(loaded.wait(5000));
        QVERIFY2(view.header_text().contains(
                     QStringLiteral("rank 1: crash after its last trial result, in phase perf")),
                 qPrintable(view.header_text()));
        // The trial's verdicts stay as reported; the crash adds no column.
        QCOMPARE(view.grid_model()->columnCount(), 1);
        QCOMPARE(view.grid_model()->cell(1, 0).state, CellState::Pass);
    }

    // Review point 16: a failing cell whose worst ratio is 8.32e+04 read "8...." in the grid's 52-px
    // column; the grid now shows "8.3e4", which the column holds whole.
    void grid_cells_hold_a_large_ratio_whole() {
        auto data = std::make_shared<RunData>();
        data->run.world_size = 1;
        data->run.trials = 1;
        RankResultRow rank;
        rank.outcome = RankOutcome::Mismatch;
        data->ranks.push_back(rank);
        TensorResultRow tensor;
        tensor.name = "output";
        tensor.pass = false;
        tensor.numel = 1024;
        tensor.mismatch_count = 9;
        tensor.worst_ratio = 8.32e4;
        data->tensors.push_back(tensor);
        RunView view;
        view.grid_model()->set_run(data);
        const QString text = view.grid_model()->index(0, 0).data(Qt::DisplayRole).toString();
        QCOMPARE(text, QStringLiteral("8.3e4"));
        const int room = view.grid_view()->horizontalHeader()->defaultSectionSize() - 8;
        QVERIFY2(view.grid_view()->fontMetrics().horizontalAdvance(text) <= room,
                 qPrintable(QStringLiteral("'%1' in %2 px").arg(text).arg(room)));
    }

    void run_view_shows_grid_heatmaps_and_rescoring() {
        RunView view;
        view.set_store(store_);
        QSignalSpy loaded(&view, &RunView::run_loaded);
        QSignalSpy heatmaps(&view, &RunView::heatmaps_ready);
        QSignalSpy rescored(&view, &RunView::rescore_ready);
        view.open_run(eval_.run_id);
        QVERIFY(loaded.wait(5000));
        QVERIFY(view.header_text().contains(QStringLiteral("mismatch")));
        QCOMPARE(view.grid_model()->cell(1, 1).state, CellState::Fail);
        // The view starts on the failing cell and its failing output.
        QCOMPARE(view.grid_view()->currentIndex().row(), 1);
        QCOMPARE(view.grid_view()->currentIndex().column(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(heatmaps.count() > 0, 5000);
        const HeatmapSet& set = view.heatmaps()->current();
        QVERIFY(set.has_values);
        QCOMPARE(set.error.mismatch_count, qint64(3));
        QCOMPARE(set.error.first_mismatch, qint64(1));
        QCOMPARE(set.error.worst_mismatch, qint64(11));
        QCOMPARE(set.ref.at(3, 3), 15.0f);
        QVERIFY(view.heatmaps()->summary_text().contains(QStringLiteral("3 of 16 elements mismatch")));
        QVERIFY(view.heatmaps()->summary_text().contains(QStringLiteral(
            "worst at [2, 3] (reference 11, candidate nan), first at [0, 1] (reference 1, candidate 1.5)")));
        QTRY_VERIFY_WITH_TIMEOUT(rescored.count() > 0, 5000);
        QCOMPARE(view.tolerance_model()->rowCount(), 4);
        QCOMPARE(view.tolerance_model()->pass_count(), 3);

        // A looser atol re-scores the same files: the 0.5 error passes, the NaN never does.
        heatmaps.clear();
        view.set_tolerances(1.0, 0.0);
        QTRY_VERIFY_WITH_TIMEOUT(heatmaps.count() > 0, 5000);
        QCOMPARE(view.heatmaps()->current().error.mismatch_count, qint64(1));

        // Another cell: rank 0 trial 0 passes exactly.
        heatmaps.clear();
        view.select_cell(0, 0);
        QTRY_VERIFY_WITH_TIMEOUT(heatmaps.count() > 0, 5000);
        QCOMPARE(view.heatmaps()->current().error.mismatch_count, qint64(0));
        QCOMPARE(view.tensor_names(), QStringList{QStringLiteral("output")});
    }

    void run_folder_without_store() {
        RunView view;
        QSignalSpy loaded(&view, &RunView::run_loaded);
        view.open_folder(QString::fromStdString(eval_.run_dir.string()));
        QVERIFY(loaded.wait(5000));
        QCOMPARE(view.grid_model()->rowCount(), 2);
        QCOMPARE(view.grid_model()->cell(1, 1).state, CellState::Fail);
        QCOMPARE(view.grid_model()->cell(0, 1).state, CellState::Pass);
        QCOMPARE(view.data()->run.status, RunStatus::Mismatch);
    }

    // Review point 20: a run folder opened alone is the run its config.json names ("Run 7", not
    // "Run 0"), and still not a run of the open store.
    void run_folder_reads_its_run_number() {
        const std::filesystem::path folder = test::temp_path(QStringLiteral("numbered-run")).toStdString();
        std::filesystem::remove_all(folder);
        std::filesystem::copy(eval_.run_dir, folder, std::filesystem::copy_options::recursive);
        std::ofstream(folder / "config.json")
            << R"({"run_id": 7, "problem": "2_allgather", "mode": "eval", "backend": "host",)"
            << R"( "world_size": 2, "dtype": "f32", "trials": 3, "atol": 0.01, "rtol": 0})";
        RunView view;
        QSignalSpy loaded(&view, &RunView::run_loaded);
        view.open_folder(QString::fromStdString(folder.string()));
        QVERIFY(loaded.wait(5000));
        QCOMPARE(view.data()->run.id, qint64(7));
        QVERIFY(!view.data()->from_store);
        QVERIFY2(view.header_text().startsWith(QStringLiteral("<b>Run 7</b>")),
                 qPrintable(view.header_text()));
        QCOMPARE(view.data()->run.status, RunStatus::Mismatch);
    }

    void perf_view_speedup() {
        auto data = std::make_shared<const RunData>(load_run(store_.toStdString(), perf_id_));
        PerfView view;
        view.set_data(data);
        const PerfFigures f = compute_perf(*data);
        QVERIFY(f.has_samples);
        QCOMPARE(f.speedup, 2.0);
        QCOMPARE(f.verdict, QStringLiteral("faster"));
        QVERIFY(view.summary_text().contains(QStringLiteral("Speedup 2.000×")));
        QCOMPARE(view.plot()->plottableCount(), 2); // reference and candidate boxes
    }

    void source_view_diff_and_diagnostics() {
        SourceView view;
        view.set_sources(QStringLiteral("ref"), QStringLiteral("int a;\nint b;\nint c;\n"),
                         QStringLiteral("cand"), QStringLiteral("int a;\nfloat b;\nint c;\nint d;\n"),
                         QStringLiteral("solution.cu(2): error: identifier \"flot\" is undefined\n"
                                        "solution.cu:4:5: warning: unused variable 'd'\n"));
        QCOMPARE(view.deleted_lines(), 1);
        QCOMPARE(view.inserted_lines(), 2);
        QCOMPARE(view.diagnostics().size(), 2);
        QCOMPARE(view.diagnostics()[0].line, 2);
        QCOMPARE(view.diagnostics()[0].severity, QStringLiteral("error"));
        QCOMPARE(view.diagnostics()[1].line, 4);
        QCOMPARE(view.diagnostics()[1].column, 5);
    }

    // Review #19: two unrelated implementations scatter over filler rows when aligned; unticking
    // "Align by diff" shows each side as its file, numbered, with the diff's counts kept.
    void source_view_shows_the_sides_unaligned() {
        SourceView view;
        view.set_sources(QStringLiteral("ref.py"), QStringLiteral("a\nb\nc\n"), QStringLiteral("cand.py"),
                         QStringLiteral("x\ny\nb\nz\n"), QStringLiteral("cand.py:4:1: warning: w\n"));
        QVERIFY(view.aligned());
        const QStringList aligned_left = view.shown_left().split(QLatin1Char('\n'));
        QVERIFY2(aligned_left.size() > 3, qPrintable(view.shown_left())); // fillers for x, y
        view.set_aligned(false);
        QCOMPARE(view.shown_left(), QStringLiteral("1  a\n2  b\n3  c"));
        QCOMPARE(view.shown_right(), QStringLiteral("1  x\n2  y\n3  b\n4  z"));
        QCOMPARE(view.deleted_lines(), 2);     // a, c
        QCOMPARE(view.inserted_lines(), 3);    // x, y, z
        QCOMPARE(view.marked_lines(false), 1); // the warning still marks the candidate's line 4
        QVERIFY(view.diff_summary().contains(QStringLiteral("2 lines only in the reference")));
        // Unaligned, each side scrolls on its own.
        const QString long_text = QStringLiteral("line\n").repeated(400);
        view.set_sources(QStringLiteral("l"), long_text, QStringLiteral("r"),
                         QStringLiteral("other\n").repeated(400));
        view.resize(600, 400);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        auto* left = view.findChild<QPlainTextEdit*>(QStringLiteral("referenceSource"));
        auto* right = view.findChild<QPlainTextEdit*>(QStringLiteral("candidateSource"));
        QVERIFY(left && right);
        QTRY_VERIFY(right->verticalScrollBar()->maximum() >= 300);
        left->verticalScrollBar()->setValue(200);
        QCOMPARE(right->verticalScrollBar()->value(), 0);
        view.set_aligned(true);                                    // aligned, the two scroll together again
        QTRY_VERIFY(right->verticalScrollBar()->maximum() >= 300); // the new texts' scroll ranges
        left->verticalScrollBar()->setValue(300);
        QCOMPARE(right->verticalScrollBar()->value(), 300);
        QCOMPARE(view.shown_left().split(QLatin1Char('\n')).size(),
                 view.shown_right().split(QLatin1Char('\n')).size());
    }

    void generations_view_loads() {
        GenerationsView view;
        QSignalSpy loaded(&view, &GenerationsView::loaded);
        view.set_store(store_);
        QVERIFY(loaded.wait(5000));
        QCOMPARE(view.model()->rowCount(), 1);
        QCOMPARE(view.fast_p_plot()->graphCount(), 1);
    }

    // The catalog is pkbw's own list (`pkbw problems --json`): ordered by number, whatever the JSON's
    // order; a broken entry is named and the entries before it kept.
    void problem_catalog_parses_pkbw_problems_json() {
        const QByteArray json = R"([{"id":10,"stem":"10_embedding","title":"E","folder":"/p/10_embedding",
            "files":{"README.md":"/p/10_embedding/README.md"}},
            {"id":2,"stem":"2_allgather","title":"A","folder":"/p/2_allgather","files":{}},
            {"id":1,"stem":"1_allreduce","title":"R","folder":"","files":{}}])";
        const ProblemCatalog catalog = parse_problem_catalog(json);
        QCOMPARE(catalog.error, QString());
        QCOMPARE(catalog.stems(), (QStringList{QStringLiteral("1_allreduce"), QStringLiteral("2_allgather"),
                                               QStringLiteral("10_embedding")}));
        QCOMPARE(catalog.find(QStringLiteral("10_embedding"))->readme,
                 QStringLiteral("/p/10_embedding/README.md"));
        QCOMPARE(catalog.problems_root(), QStringLiteral("/p"));
        const ProblemCatalog broken =
            parse_problem_catalog(R"([{"id":3,"stem":"3_broadcast"},{"title":"x"}])");
        QCOMPARE(broken.stems(), QStringList{QStringLiteral("3_broadcast")});
        QVERIFY2(broken.error.contains(QStringLiteral("entry 1")), qPrintable(broken.error));
        QVERIFY(!parse_problem_catalog("not json").error.isEmpty());
        // pkbw's JSON lines: one {"event":"problem", ...} object per line.
        const ProblemCatalog lines =
            parse_problem_catalog("{\"event\":\"problem\",\"id\":2,\"stem\":\"2_allgather\",\"files\":{}}\n"
                                  "{\"event\":\"problem\",\"id\":1,\"stem\":\"1_allreduce\",\"files\":{}}\n");
        QCOMPARE(lines.error, QString());
        QCOMPARE(lines.stems(), (QStringList{QStringLiteral("1_allreduce"), QStringLiteral("2_allgather")}));
        const ProblemCatalog missing = load_problem_catalog(QStringLiteral("/nonexistent/pkbw"), 2000);
        QVERIFY(missing.problems.isEmpty());
        QVERIFY2(missing.error.contains(QStringLiteral("/nonexistent/pkbw")), qPrintable(missing.error));
    }

    // The browser shows what the catalog names (its files, wherever they are), and says which files
    // the data directory lacks (an installed tree has no problem.cpp).
    void problem_browser_reads_the_catalogs_files() {
        const QString root = test::temp_path(QStringLiteral("problems"));
        QDir().mkpath(root + QStringLiteral("/7_demo"));
        QFile readme(root + QStringLiteral("/7_demo/README.md"));
        QVERIFY(readme.open(QIODevice::WriteOnly));
        readme.write("# Demo\nAll-reduce of a vector.\n");
        readme.close();
        QFile ref(root + QStringLiteral("/7_demo/reference.cu"));
        QVERIFY(ref.open(QIODevice::WriteOnly));
        ref.write("__global__ void k() {}\n");
        ref.close();
        const ProblemCatalog catalog = parse_problem_catalog(
            QStringLiteral(R"([{"id":7,"stem":"7_demo","title":"Demo","folder":"%1/7_demo",
                "files":{"README.md":"%1/7_demo/README.md","reference.cu":"%1/7_demo/reference.cu"}}])")
                .arg(root)
                .toUtf8());
        ProblemBrowser browser(nullptr, &catalog);
        QCOMPARE(browser.problems(), QStringList{QStringLiteral("7_demo")});
        QVERIFY(browser.description().contains(QStringLiteral("All-reduce of a vector.")));
        QCOMPARE(browser.reference_source(), QStringLiteral("__global__ void k() {}\n"));
    }

    // This build's own pkbw lists every registered problem with its folder: the browser a user opens
    // is filled from it, not from a path compiled into the GUI.
    void problem_catalog_of_this_build_lists_the_registered_problems() {
        const ProblemCatalog& catalog = problem_catalog();
        QVERIFY2(catalog.error.isEmpty(), qPrintable(catalog.error));
        QVERIFY2(catalog.source.startsWith(QCoreApplication::applicationDirPath()),
                 qPrintable(catalog.source));
        QVERIFY(catalog.problems.size() >= 60);
        const ProblemEntry* first = catalog.find(QStringLiteral("1_allreduce"));
        QVERIFY(first != nullptr);
        QVERIFY(QFileInfo::exists(first->reference_host));
        ProblemBrowser browser;
        QCOMPARE(browser.problems().size(), catalog.problems.size());
    }

    void timeline_merges_sub_pixel_events() {
        TimelineWidget w;
        w.resize(1110, 300);
        w.set_trace(std::make_shared<const TimelineData>(synthetic_trace(2, 2, 100000)));
        QImage image(w.size(), QImage::Format_ARGB32_Premultiplied);
        w.render(&image);
        // 400k events on 1000 px per lane: at most a few rectangles per pixel column are drawn.
        QVERIFY(w.last_drawn() > 0);
        QVERIFY2(w.last_drawn() <= 4 * 1000, qPrintable(QString::number(w.last_drawn())));
        const double span = w.window_end() - w.window_begin();
        w.zoom(0.001, 600);
        QVERIFY(std::fabs((w.window_end() - w.window_begin()) - span * 0.001) < span * 1e-9);
        w.render(&image);
        QVERIFY(w.last_drawn() > 0);
    }

    // The review's "keep" list: right-click a chart → Export chart… writes the PNG, SVG or PDF chosen,
    // of the chart's size; right-click a table → CSV. The real context menu is opened (its
    // customContextMenuRequested) and its action triggered, the file dialog replaced by the prompt seam.
    void context_menus_export_charts_and_tables() {
        QWidget root;
        auto* layout = new QVBoxLayout(&root);
        auto* plot = new QCustomPlot(&root);
        plot->addGraph()->setData({0, 1, 2, 3}, {1, 3, 2, 4});
        plot->rescaleAxes();
        auto* table = new QTableWidget(2, 2, &root);
        table->setHorizontalHeaderLabels({QStringLiteral("name"), QStringLiteral("value")});
        table->setItem(0, 0, new QTableWidgetItem(QStringLiteral("a, b")));
        table->setItem(0, 1, new QTableWidgetItem(QStringLiteral("1")));
        table->setItem(1, 0, new QTableWidgetItem(QStringLiteral("c")));
        table->setItem(1, 1, new QTableWidgetItem(QStringLiteral("2")));
        layout->addWidget(plot);
        layout->addWidget(table);
        root.resize(500, 700);
        root.show();
        QVERIFY(QTest::qWaitForWindowExposed(&root));
        plot->setFixedSize(400, 300);
        QApplication::processEvents();
        install_export_menus(&root);
        QCOMPARE(plot->contextMenuPolicy(), Qt::CustomContextMenu);
        QCOMPARE(table->contextMenuPolicy(), Qt::CustomContextMenu);

        QString answer;
        QStringList offered, errors;
        set_export_prompts(
            [&](QWidget*, const QString&, const QString& filters) {
                offered << filters;
                return answer;
            },
            [&](QWidget*, const QString& error) { errors << error; });
        // Opens the widget's context menu as a right click does and triggers the action named `text`.
        auto choose = [&](QWidget* widget, const QString& text) {
            QStringList seen;
            QTimer::singleShot(0, &root, [&] {
                auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
                if (!menu) {
                    return;
                }
                for (QAction* action : menu->actions()) {
                    seen << action->text();
                    if (action->text() == text) {
                        action->trigger();
                    }
                }
                menu->close();
            });
            emit widget->customContextMenuRequested(QPoint(20, 20));
            return seen;
        };

        for (const char* ext : {"png", "svg", "pdf"}) {
            answer = test::temp_path(QStringLiteral("menu_chart.") + QString::fromLatin1(ext));
            QFile::remove(answer);
            const QStringList seen = choose(plot, QStringLiteral("Export chart…"));
            QCOMPARE(seen, QStringList({QStringLiteral("Export chart…"), QStringLiteral("Reset zoom")}));
            QCOMPARE(errors, QStringList());
            QVERIFY2(QFileInfo(answer).size() > 100, qPrintable(answer));
        }
        QCOMPARE(offered.first(), QStringLiteral("PNG (*.png);;SVG (*.svg);;PDF (*.pdf)"));
        const QImage png(test::temp_path(QStringLiteral("menu_chart.png")));
        QCOMPARE(png.size(), QSize(400, 300));
        QSet<QRgb> colours; // the drawn chart: background, axes, the graph's line, text
        for (int y = 0; y < png.height(); ++y) {
            for (int x = 0; x < png.width(); ++x) {
                colours.insert(png.pixel(x, y));
            }
        }
        QVERIFY2(colours.size() >= 3, qPrintable(QString::number(colours.size())));
        QSvgRenderer svg(test::temp_path(QStringLiteral("menu_chart.svg")));
        QVERIFY(svg.isValid());
        QCOMPARE(svg.viewBox(), QRect(0, 0, 400, 300));
        QFile pdf(test::temp_path(QStringLiteral("menu_chart.pdf")));
        QVERIFY(pdf.open(QIODevice::ReadOnly));
        const QByteArray pdf_bytes = pdf.readAll();
        QVERIFY(pdf_bytes.startsWith("%PDF-"));
        // The page is the chart's size in points (Qt writes "400.000000").
        const QRegularExpression media_box(QStringLiteral("/MediaBox \\[0 0 400(\\.0*)? 300(\\.0*)?\\]"));
        QVERIFY(media_box.match(QString::fromLatin1(pdf_bytes)).hasMatch());

        // An unwritable path is reported, not silent.
        answer = QStringLiteral("/nonexistent-dir/chart.png");
        choose(plot, QStringLiteral("Export chart…"));
        QCOMPARE(errors.size(), 1);
        QVERIFY2(errors.first().contains(QStringLiteral("could not be written")), qPrintable(errors.first()));

        answer = test::temp_path(QStringLiteral("menu_table.csv"));
        const QStringList table_actions = choose(table, QStringLiteral("Export table as CSV…"));
        QVERIFY(table_actions.contains(QStringLiteral("Export as image…")));
        QFile csv(answer);
        QVERIFY(csv.open(QIODevice::ReadOnly));
        QCOMPARE(csv.readAll(), QByteArray("name,value\n\"a, b\",1\nc,2\n"));
        set_export_prompts({}, {});

        // The dialog's default: a name typed without an extension takes the chosen filter's.
        QCOMPARE(with_filter_extension(QStringLiteral("/t/chart"), QStringLiteral("SVG (*.svg)")),
                 QStringLiteral("/t/chart.svg"));
        QCOMPARE(with_filter_extension(QStringLiteral("/t/chart.pdf"), QStringLiteral("SVG (*.svg)")),
                 QStringLiteral("/t/chart.pdf"));
    }

    void main_window_starts_on_missing_store_and_exports() {
        const QString path = test::temp_path(QStringLiteral("new/missing.db"));
        MainWindow window;
        QSignalSpy opened(&window, &MainWindow::store_opened);
        QSignalSpy failed(&window, &MainWindow::store_failed);
        window.open_store(path, true); // the default store is created; a typed path is not (tst_inspect)
        QVERIFY(opened.wait(5000));
        QCOMPARE(failed.count(), 0);
        QVERIFY(QFile::exists(path));
        QSignalSpy loaded(window.runs()->model(), &RunsModel::page_loaded);
        QVERIFY(loaded.wait(5000));
        QCOMPARE(window.runs()->model()->total(), qint64(0));

        window.open_store(store_);
        QVERIFY(opened.wait(5000));
        QTRY_COMPARE_WITH_TIMEOUT(window.runs()->model()->total(), qint64(2), 5000);
        const QString csv = csv_text(window.runs()->model());
        QVERIFY(csv.startsWith(QStringLiteral("Id,Started,Problem")));
        QCOMPARE(csv.count(QLatin1Char('\n')), 3);
        const QString csv_path = test::temp_path(QStringLiteral("runs.csv"));
        QCOMPARE(export_csv(window.runs()->model(), csv_path), QString());
        QVERIFY(QFileInfo(csv_path).size() > 20);

        auto* plot = window.perf_view()->plot();
        plot->resize(400, 300);
        for (const char* ext : {"png", "svg", "pdf"}) {
            const QString out = test::temp_path(QStringLiteral("chart.") + QString::fromLatin1(ext));
            QCOMPARE(export_chart(plot, out), QString());
            QVERIFY(QFileInfo(out).size() > 100);
        }
        QFile svg(test::temp_path(QStringLiteral("chart.svg")));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        QVERIFY(svg.readAll().contains("<svg"));
        QVERIFY(!export_chart(plot, test::temp_path(QStringLiteral("chart.bmpx"))).isEmpty());
    }
};

QTEST_MAIN(TestViews)
#include "tst_views.moc"
