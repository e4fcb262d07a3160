#include "generationsview.h"

#include "background.h"
#include "qtconvert.h"
#include "theme.h"

#include <QFontMetrics>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

namespace pkbw::app {

std::vector<ScoredResult> GenerationMatrix::results_of(int generation) const {
    std::vector<ScoredResult> out;
    for (int p = 0; p < static_cast<int>(problems.size()); ++p) {
        auto it = cells.find({generation, p});
        if (it == cells.end()) {
            out.push_back({});
        } else {
            out.push_back({it->second.correct, it->second.speedup});
        }
    }
    return out;
}

GenerationMatrix load_generation_matrix(const Store& store) {
    GenerationMatrix m;
    RunSort sort;
    sort.column = RunSortColumn::StartedAt;
    sort.descending = true;
    std::vector<RunRecord> runs;
    for (int offset = 0;; offset += 5000) {
        auto page = store.list_runs({}, sort, 5000, offset);
        const bool last = page.size() < 5000;
        for (auto& r : page) {
            runs.push_back(std::move(r));
        }
        if (last) {
            break;
        }
    }
    std::map<std::string, int> gen_index, problem_index;
    for (const auto& r : runs) {
        if (r.solution_kind == SolutionKind::Reference) {
            continue;
        }
        gen_index.emplace(r.generation.label.empty() ? std::string("(none)") : r.generation.label, 0);
        problem_index.emplace(r.problem_stem, 0);
    }
    for (auto& [name, index] : gen_index) {
        index = static_cast<int>(m.generations.size());
        m.generations.push_back(name);
    }
    for (auto& [name, index] : problem_index) {
        index = static_cast<int>(m.problems.size());
        m.problems.push_back(name);
    }
    // Newest first: the first run seen of a pair is its latest; the first perf run gives the speedup.
    for (const auto& r : runs) {
        if (r.solution_kind == SolutionKind::Reference) {
            continue;
        }
        const int g = gen_index[r.generation.label.empty() ? std::string("(none)") : r.generation.label];
        const int p = problem_index[r.problem_stem];
        auto [it, inserted] = m.cells.try_emplace({g, p});
        MatrixCell& c = it->second;
        if (inserted) {
            c.run_id = r.id;
            c.status = r.status;
            c.correct = r.status == RunStatus::Pass;
        }
        if (r.mode == RunMode::Perf && !c.speedup && r.status == RunStatus::Pass) {
            for (const auto& s : store.perf_summaries(r.id)) {
                if (s.statistic == "speedup" && s.rank == -1) {
                    c.speedup = s.value;
                }
            }
        }
    }
    return m;
}

GenerationMatrixModel::GenerationMatrixModel(QObject* parent)
    : QAbstractTableModel(parent) {}

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
        return c->speedup ? QStringLiteral("%1 %2×").arg(status_text(c->status),
                                                         QString::number(*c->speedup, 'f', 2))
                          : status_text(c->status);
    case Qt::BackgroundRole:
        if (c->status == RunStatus::Pass) {
            return ratio_color(true, c->speedup && *c->speedup >= 1 ? 0.0 : 0.8);
        }
        return status_color(c->status).lighter(170);
    case Qt::ForegroundRole:
        return QColor(Qt::black);
    case Qt::ToolTipRole:
        return tr("run %1: %2").arg(c->run_id).arg(status_text(c->status));
    case Qt::TextAlignmentRole:
        return QVariant(Qt::AlignCenter);
    }
    return {};
}

QVariant GenerationMatrixModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) {
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    const auto& names = orientation == Qt::Horizontal ? matrix_.problems : matrix_.generations;
    return section >= 0 && section < static_cast<int>(names.size())
               ? to_qstring(names[static_cast<std::size_t>(section)])
               : QVariant();
}

GenerationsView::GenerationsView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    status_ = new QLabel(tr("No store open."), this);
    status_->setObjectName(QStringLiteral("generationsStatus"));
    layout->addWidget(status_);
    auto* split = new QSplitter(Qt::Vertical, this);
    model_ = new GenerationMatrixModel(this);
    view_ = new QTableView(split);
    view_->setObjectName(QStringLiteral("generationMatrix"));
    view_->setModel(model_);
    view_->horizontalHeader()->setDefaultSectionSize(120);
    split->addWidget(view_);
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
    fast_p_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    geomean_ = new QCustomPlot(charts);
    geomean_->setObjectName(QStringLiteral("geomeanPlot"));
    geomean_->plotLayout()->insertRow(0);
    geomean_->plotLayout()->addElement(
        0, 0, new QCPTextElement(geomean_, tr("Geometric-mean speedup (correct results)")));
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

void GenerationsView::set_store(const QString& path) {
    store_ = path;
    reload();
}

void GenerationsView::reload() {
    if (store_.isEmpty()) {
        return;
    }
    status_->setText(tr("Loading…"));
    run_in_background(
        this, [p = to_path(store_)] { return load_generation_matrix(Store::open_read_only(p)); },
        [this](Loaded<GenerationMatrix> r) {
            if (!r.ok()) {
                status_->setText(tr("Could not read the store: %1").arg(r.error));
                return;
            }
            model_->set_matrix(std::move(r.value));
            status_->setText(
                tr("%1 generations × %2 problems (latest run per cell; activate a cell to open it)")
                    .arg(model_->rowCount())
                    .arg(model_->columnCount()));
            update_plots();
            emit loaded();
        });
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
        const QString name = to_qstring(m.generations[static_cast<std::size_t>(g)]);
        QCPGraph* graph = fast_p_->addGraph();
        graph->setName(name);
        graph->setLineStyle(QCPGraph::lsStepLeft);
        graph->setPen(QPen(QColor::fromHsv((g * 67) % 360, 180, 200), 2));
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
        label->setText(v ? QStringLiteral("%1×").arg(*v, 0, 'f', 2) : tr("no correct result"));
        if (v) {
            widest = std::max(widest, QFontMetrics(label->font()).horizontalAdvance(label->text()) + 8);
        }
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
