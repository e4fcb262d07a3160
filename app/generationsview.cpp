#include "generationsview.h"

#include "background.h"
#include "qtconvert.h"
#include "theme.h"

#include <QComboBox>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QResizeEvent>
#include <QScrollBar>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <qcustomplot.h>

namespace pkbw::app {

namespace {
constexpr int kProblemsNamedInline = 12; // the header names at most this many problems, else on hover
} // namespace

void GenerationMatrixModel::set_matrix(GenerationMatrix matrix) {
    beginResetModel();
    matrix_ = std::move(matrix);
    endResetModel();
}

const MatrixCell* GenerationMatrixModel::cell(int row, int column) const {
    auto it = matrix_.cells.find({row, column});
    return it == matrix_.cells.end() ? nullptr : &it->second;
}

std::int64_t GenerationMatrixModel::run_id(const QModelIndex& index) const {
    const MatrixCell* c = index.isValid() ? cell(index.row(), index.column()) : nullptr;
    return c ? c->run_id : 0;
}

int GenerationMatrixModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(matrix_.generations.size());
}

int GenerationMatrixModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(matrix_.problems.size());
}

QVariant GenerationMatrixModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
        return {};
    }
    const MatrixCell* c = cell(index.row(), index.column());
    if (!c) {
        return role == Qt::DisplayRole ? QVariant(QStringLiteral("–")) : QVariant();
    }
    switch (role) {
    case Qt::DisplayRole:
        if (!c->result) {
            return tr("no result (%1)").arg(status_text(c->status));
        }
        return c->speedup ? QStringLiteral("%1 %2%3").arg(
                                status_text(c->status), result_speedup_text(c->outcome(), 2),
                                c->speedup_source == "PKB" ? QStringLiteral(" PKB") : QString())
                          : status_text(c->status);
    case Qt::BackgroundRole:
        if (!c->result) {
            return QColor(0xd8, 0xd8, 0xd8);
        }
        if (c->status == RunStatus::Pass) {
            return ratio_color(true, c->speedup && *c->speedup >= 1 ? 0.0 : 0.8);
        }
        return status_color(c->status).lighter(170);
    case Qt::ForegroundRole:
        return QColor(Qt::black);
    case Qt::ToolTipRole: {
        QString tip = tr("run %1 (%2 of %3 result runs): %4")
                          .arg(c->run_id)
                          .arg(matrix_.pick == CellPick::Best ? tr("best") : tr("latest"))
                          .arg(c->results)
                          .arg(status_text(c->status));
        if (c->speedup) {
            tip += tr(", %1's ").arg(to_qstring(c->speedup_source)) + result_speedup_tooltip(c->outcome());
        } else if (c->result && !speedup_is_result(c->status)) {
            tip += tr("; no speedup: %1").arg(to_qstring(speedup_withheld_reason(c->status)));
        }
        if (c->infra_errors > 0) {
            tip +=
                tr("; %1 run(s) ended in an infrastructure error and are not results").arg(c->infra_errors);
        }
        return tip;
    }
    case Qt::TextAlignmentRole:
        return QVariant(Qt::AlignCenter);
    }
    return {};
}

QVariant GenerationMatrixModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role == Qt::ToolTipRole && orientation == Qt::Vertical && section >= 0 &&
        section < static_cast<int>(matrix_.generations.size())) {
        return to_qstring(matrix_.generations[static_cast<std::size_t>(section)]);
    }
    if (role == Qt::ToolTipRole && orientation == Qt::Horizontal && section >= 0 &&
        section < static_cast<int>(matrix_.problems.size())) {
        return to_qstring(matrix_.problems[static_cast<std::size_t>(section)]);
    }
    if (role != Qt::DisplayRole) {
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    const auto& names = orientation == Qt::Horizontal ? matrix_.problems : matrix_.short_labels;
    return section >= 0 && section < static_cast<int>(names.size())
               ? to_qstring(names[static_cast<std::size_t>(section)])
               : QVariant();
}

GenerationsView::GenerationsView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    status_ = new QLabel(tr("No store open."), this);
    status_->setObjectName(QStringLiteral("generationsStatus"));
    status_->setWordWrap(true);
    top->addWidget(status_, 1);
    top->addWidget(new QLabel(tr("Cell shows:"), this));
    pick_ = new QComboBox(this);
    pick_->setObjectName(QStringLiteral("generationPick"));
    pick_->addItem(tr("latest result"));
    pick_->addItem(tr("best result"));
    top->addWidget(pick_);
    layout->addLayout(top);
    connect(pick_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { reload(); });
    auto* split = new QSplitter(Qt::Vertical, this);
    split_ = split;
    model_ = new GenerationMatrixModel(this);
    auto* tables = new QSplitter(Qt::Horizontal, split);
    tables_ = tables;
    view_ = new QTableView(tables);
    view_->setObjectName(QStringLiteral("generationMatrix"));
    view_->setModel(model_);
    // Full problem names, never clipped ("12_allgather_gemm" must not read "2_allgather_gem").
    view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    view_->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    view_->horizontalHeader()->setTextElideMode(Qt::ElideNone);
    tables->addWidget(view_);
    stats_ = new QTableWidget(0, 6, tables);
    stats_->setObjectName(QStringLiteral("generationStats"));
    stats_->setHorizontalHeaderLabels(
        {tr("Generation"), tr("With a result"), tr("Correct"), tr("fast_1"), tr("Geomean ×"), tr("n")});
    // Not "attempted": the Sweeps tab's attempted counts every pair with a solution file, and a pair whose
    // only run ended in an infrastructure error (a refusal to run here, as NVLink multicast) has none.
    stats_->horizontalHeaderItem(1)->setToolTip(tr(
        "Pairs whose run is a result. Infrastructure errors (error, interrupted, aborted: a refusal to run "
        "on this machine, such as NVLink multicast) are not, so this can be below the Sweeps tab's "
        "attempted."));
    stats_->verticalHeader()->hide();
    stats_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    stats_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    tables->addWidget(stats_);
    tables->setStretchFactor(0, 3);
    tables->setStretchFactor(1, 2);
    split->addWidget(tables);
    auto* charts = new QSplitter(Qt::Horizontal, split);
    fast_p_ = new QCustomPlot(charts);
    fast_p_->setObjectName(QStringLiteral("fastPPlot"));
    fast_p_->plotLayout()->insertRow(0);
    fast_p_->plotLayout()->addElement(
        0, 0, new QCPTextElement(fast_p_, tr("fast_p: fraction correct and faster than p×")));
    fast_p_->xAxis->setLabel(tr("p (speedup threshold)"));
    fast_p_->yAxis->setLabel(tr("fast_p"));
    fast_p_->yAxis->setRange(0, 1.05);
    fast_p_->legend->setVisible(true);
    // The legend beside the plot, not over the curves.
    fast_p_->axisRect()->insetLayout()->take(fast_p_->legend);
    fast_p_->plotLayout()->addElement(1, 1, fast_p_->legend);
    fast_p_->plotLayout()->setColumnStretchFactor(1, 0.001);
    fast_p_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    geomean_ = new QCustomPlot(charts);
    geomean_->setObjectName(QStringLiteral("geomeanPlot"));
    geomean_->plotLayout()->insertRow(0);
    geomean_->plotLayout()->addElement(
        0, 0,
        new QCPTextElement(geomean_, tr("Geometric-mean speedup (correct, measured results; n = how many)")));
    geomean_->xAxis->setLabel(tr("speedup × (geometric mean)"));
    charts->addWidget(fast_p_);
    charts->addWidget(geomean_);
    split->addWidget(charts);
    layout->addWidget(split, 1);
    connect(view_, &QTableView::activated, this, [this](const QModelIndex& index) {
        if (const auto id = model_->run_id(index)) {
            emit run_activated(id);
        }
    });
}

void GenerationsView::set_pick(CellPick pick) {
    pick_->setCurrentIndex(pick == CellPick::Best ? 1 : 0); // reloads when it changes
}

QString GenerationsView::status_text() const {
    return status_->text();
}

QString GenerationsView::status_tooltip() const {
    return status_->toolTip();
}

void GenerationsView::set_store(const QString& path) {
    store_ = path;
    reload();
}

void GenerationsView::reload() {
    if (store_.isEmpty()) {
        return;
    }
    status_->setText(tr("Loading…"));
    const CellPick pick = pick_->currentIndex() == 1 ? CellPick::Best : CellPick::Latest;
    run_in_background(
        this, [p = to_path(store_), pick] { return load_generation_matrix(Store::open_read_only(p), pick); },
        [this](Loaded<GenerationMatrix> r) {
            if (!r.ok()) {
                status_->setText(tr("Could not read the store: %1").arg(r.error));
                status_->setToolTip(QString()); // not the problems of the store read before
                return;
            }
            model_->set_matrix(std::move(r.value));
            const GenerationMatrix& m = model_->matrix();
            QStringList problems;
            for (const auto& p : m.problems) {
                problems << to_qstring(p);
            }
            // A dozen names read in the sentence; more (82 for a sweep of PKB's solutions) filled a third
            // of a laptop's screen: then the list is on hover.
            const bool listed = problems.size() <= kProblemsNamedInline;
            status_->setToolTip(listed ? QString() : problems.join(QStringLiteral(", ")));
            status_->setText(
                tr("%1 generations × %2 problems. Denominator of fast_p and of the table: the %2 problems "
                   "the "
                   "generations were run on (%3). Each cell: the %4 result of the pair, its own status and "
                   "speedup (PKB's for imported PKB runs); infrastructure errors are not results. Left out: "
                   "%5 calibration, %6 reference and %7 ad-hoc runs (no generation folder). Activate a cell "
                   "to open its run.")
                    .arg(model_->rowCount())
                    .arg(model_->columnCount())
                    .arg(listed ? problems.join(QStringLiteral(", ")) : tr("listed on hover"))
                    .arg(m.pick == CellPick::Best ? tr("best (correct, fastest)") : tr("latest measured"))
                    .arg(m.left_out_calibration)
                    .arg(m.left_out_reference)
                    .arg(m.left_out_adhoc));
            stats_->setRowCount(static_cast<int>(m.generations.size()));
            const int denominator = static_cast<int>(m.problems.size());
            for (int g = 0; g < static_cast<int>(m.generations.size()); ++g) {
                const GenerationStats st = m.stats_of(g);
                auto* name = new QTableWidgetItem(to_qstring(m.short_labels[static_cast<std::size_t>(g)]));
                name->setToolTip(to_qstring(m.generations[static_cast<std::size_t>(g)]));
                stats_->setItem(g, 0, name);
                stats_->setItem(
                    g, 1, new QTableWidgetItem(QStringLiteral("%1 / %2").arg(st.attempted).arg(denominator)));
                stats_->setItem(
                    g, 2, new QTableWidgetItem(QStringLiteral("%1 / %2").arg(st.correct).arg(denominator)));
                stats_->setItem(
                    g, 3,
                    new QTableWidgetItem(
                        QStringLiteral("%1 / %2 (%3)")
                            .arg(st.fast_1)
                            .arg(denominator)
                            .arg(denominator ? double(st.fast_1) / denominator : 0.0, 0, 'f', 2)));
                stats_->setItem(
                    g, 4, new QTableWidgetItem(st.geomean ? QString::number(*st.geomean, 'f', 3) : tr("–")));
                stats_->setItem(g, 5, new QTableWidgetItem(QString::number(st.geomean_n)));
            }
            update_plots();
            fit_tables();
            emit loaded();
        });
}

void GenerationsView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fit_tables();
}

void GenerationsView::fit_tables() {
    // The matrix whole beside the per-generation table when both fit, else the table under the
    // matrix: no problem column behind a scrollbar while the table beside it is half empty.
    view_->resizeColumnsToContents();
    stats_->resizeColumnsToContents();
    const int frame = 2 * view_->frameWidth(), bar = view_->verticalScrollBar()->sizeHint().width();
    const int matrix_width =
        view_->verticalHeader()->sizeHint().width() + view_->horizontalHeader()->length() + frame + bar;
    const int stats_width = stats_->horizontalHeader()->length() + 2 * stats_->frameWidth() + bar;
    const int handle = tables_->handleWidth();
    const Qt::Orientation fits =
        matrix_width + stats_width + handle <= tables_->width() ? Qt::Horizontal : Qt::Vertical;
    if (fits != tables_->orientation()) {
        // The tables and charts keep their shares (3 : 2) whichever way the tables are laid out: a
        // vertical spell (while a window is still small) must not leave the charts squeezed.
        tables_->setOrientation(fits);
        const int height = split_->height();
        split_->setSizes({height * 3 / 5, height - height * 3 / 5});
    }
    if (fits == Qt::Horizontal) {
        tables_->setSizes({tables_->width() - stats_width - handle, stats_width});
        return;
    }
    const int height = tables_->height() - handle;
    const int stats_height = stats_->horizontalHeader()->sizeHint().height() +
                             stats_->verticalHeader()->length() + 2 * stats_->frameWidth() +
                             view_->horizontalScrollBar()->sizeHint().height();
    const int below = std::min(stats_height, height / 2);
    tables_->setSizes({height - below, below});
}

void GenerationsView::update_plots() {
    fast_p_->clearGraphs();
    geomean_->clearPlottables();
    geomean_->clearItems();
    const GenerationMatrix& m = model_->matrix();
    double pmax = 2;
    QVector<double> ticks, values;
    QVector<QString> labels;
    std::vector<std::optional<double>> geomeans;
    // Horizontal bars: generation names are tick labels of the left axis, written level, and the
    // axis rect's automatic margin makes room for the longest. Names are elided in the middle to
    // kLabelWidth pixels (the model's name is at the end); the matrix above shows them whole.
    constexpr int kLabelWidth = 260;
    const QFontMetrics metrics(geomean_->yAxis->tickLabelFont());
    for (int g = 0; g < static_cast<int>(m.generations.size()); ++g) {
        const auto results = m.results_of(g);
        const auto curve = fast_p_curve(results);
        const QString name = to_qstring(m.short_labels[static_cast<std::size_t>(g)]);
        QCPGraph* graph = fast_p_->addGraph();
        graph->setName(name);
        graph->setLineStyle(QCPGraph::lsStepLeft);
        // The generation's colour on every tab (generation_pen): its rank among the store's generations.
        graph->setPen(generation_pen(m.store_generations, m.generations[static_cast<std::size_t>(g)]));
        for (const auto& [p, value] : curve) {
            graph->addData(p, value);
            pmax = std::max(pmax, p * 1.1);
        }
        ticks << g;
        labels << metrics.elidedText(name, Qt::ElideMiddle, kLabelWidth);
        geomeans.push_back(geomean_speedup(results));
        values << geomeans.back().value_or(0);
    }
    for (int g = 0; g < fast_p_->graphCount(); ++g) {
        fast_p_->graph(g)->addData(pmax, 0); // the curve ends at zero past the largest speedup
    }
    fast_p_->xAxis->setRange(0, pmax);

    auto* bars = new QCPBars(geomean_->yAxis, geomean_->xAxis);
    bars->setData(ticks, values);
    bars->setWidth(0.6);
    bars->setBrush(QColor(0x45, 0x7b, 0x9d));
    bars->setPen(Qt::NoPen);
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    ticker->addTicks(ticks, labels);
    geomean_->yAxis->setTicker(ticker);
    geomean_->yAxis->setTickLabelRotation(0);
    geomean_->yAxis->setRangeReversed(true); // first generation at the top, as in the matrix
    geomean_->yAxis->setRange(-0.6, std::max(1, static_cast<int>(ticks.size())) - 0.4);
    geomean_->yAxis->grid()->setVisible(false);
    const double largest = values.isEmpty() ? 1.0 : *std::max_element(values.begin(), values.end());
    geomean_->xAxis->setRange(0, std::max(1.5, largest) * 1.1);
    // Each bar's value at its end. The longest bar's label runs past the axis rect: a right margin as
    // wide as the widest number ("10.00×") keeps it inside the widget. "no correct result" sits at 0.
    const QColor text = current_theme() == Theme::Dark ? QColor(0xd0, 0xd0, 0xd0) : Qt::black;
    int widest = 0;
    for (int g = 0; g < static_cast<int>(geomeans.size()); ++g) {
        const auto& v = geomeans[static_cast<std::size_t>(g)];
        auto* label = new QCPItemText(geomean_);
        label->setClipToAxisRect(false);
        label->position->setCoords(v.value_or(0), g);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setPadding(QMargins(4, 0, 0, 0));
        label->setColor(text);
        // Correct results with no speedup (eval runs only, as a sweep of PKB's solutions makes) are not
        // "no correct result": they were never timed.
        const int correct = m.stats_of(g).correct;
        label->setText(v ? QStringLiteral("%1× (n=%2)").arg(*v, 0, 'f', 2).arg(m.stats_of(g).geomean_n)
                       : correct > 0 ? tr("untimed: %1 correct").arg(correct)
                                     : tr("no correct result"));
        // A bar's label starts at its end; a label with no bar starts at the axis (x = 0): the right margin
        // holds either whole, and the no-bar text is short, since it shares the chart's width with the
        // names' margin (a 423 px chart held 264 px of names and 162 of "no timed result (1 correct)").
        widest = std::max(widest, QFontMetrics(label->font()).horizontalAdvance(label->text()) + 8);
    }
    auto* one = new QCPItemStraightLine(geomean_); // parity with the reference
    one->point1->setCoords(1, 0);
    one->point2->setCoords(1, 1);
    one->setPen(QPen(QColor(0xc0, 0x30, 0x30), 1, Qt::DashLine));
    QCPAxisRect* rect = geomean_->axisRect();
    rect->setAutoMargins(QCP::msLeft | QCP::msTop | QCP::msBottom);
    rect->setMargins(QMargins(0, 0, std::max(16, widest), 0));
    theme_plot(fast_p_);
    theme_plot(geomean_);
    geomean_->replot(QCustomPlot::rpQueuedReplot);
    fast_p_->replot(QCustomPlot::rpQueuedReplot);
}

} // namespace pkbw::app
