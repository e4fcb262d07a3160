#include "sweepsview.h"

#include "background.h"
#include "generationsview.h"
#include "pkbw/core/status.h"
#include "pkbw/core/sweep_store.h"
#include "qtconvert.h"
#include "theme.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>

namespace pkbw::app {
namespace {

struct SweepList {
    std::vector<SweepRecord> sweeps;
};

QTableWidgetItem* cell(const QString& text) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(item->flags() & ~Qt::ItemIsEditable);
    return item;
}

} // namespace

std::vector<std::pair<double, double>> sweep_fast_p_steps(const SweepGenerationRow& row, double p_end) {
    // Core's curve of the row's own figures: the value it draws at p is the table's fast_p(p).
    return row.fast_p_steps(p_end);
}

SweepsView::SweepsView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Sweep:"), this));
    picker_ = new QComboBox(this);
    picker_->setObjectName(QStringLiteral("sweepPicker"));
    picker_->setMinimumContentsLength(40);
    top->addWidget(picker_, 1);
    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("sweepProgress"));
    progress_->setFormat(tr("%v / %m pairs judged"));
    progress_->setRange(0, 1);
    progress_->setValue(0);
    top->addWidget(progress_, 1);
    layout->addLayout(top);
    header_ = new QLabel(tr("No sweep in this store (pkbw sweep makes one)."), this);
    header_->setObjectName(QStringLiteral("sweepHeader"));
    header_->setWordWrap(true);
    layout->addWidget(header_);

    auto* split = new QSplitter(Qt::Vertical, this);
    generations_ = new QTableWidget(split);
    generations_->setObjectName(QStringLiteral("sweepTable"));
    generations_->verticalHeader()->hide();
    generations_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    generations_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    generations_->horizontalHeader()->setStretchLastSection(true);
    auto* lower = new QSplitter(Qt::Horizontal, split);
    plot_ = new QCustomPlot(lower);
    plot_->setObjectName(QStringLiteral("sweepFastP"));
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(
        0, 0,
        new QCPTextElement(plot_, tr("fast_p per generation: share of attempted pairs correct and faster "
                                     "than p× (95% interval above p)")));
    plot_->xAxis->setLabel(tr("p (speedup threshold)"));
    plot_->yAxis->setLabel(tr("fast_p"));
    plot_->yAxis->setRange(0, 1.05);
    // The legend beside the plot, not over the curves.
    plot_->axisRect()->insetLayout()->take(plot_->legend);
    plot_->plotLayout()->addElement(1, 1, plot_->legend);
    plot_->plotLayout()->setColumnStretchFactor(1, 0.001);
    plot_->legend->setVisible(false); // until there is a curve: an empty legend is a stray box
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    failing_ = new QTableWidget(lower);
    failing_->setObjectName(QStringLiteral("sweepFailing"));
    failing_->setColumnCount(5);
    failing_->setHorizontalHeaderLabels(
        {tr("Generation"), tr("Problem"), tr("Status"), tr("Run"), tr("Message")});
    failing_->verticalHeader()->hide();
    failing_->setSelectionBehavior(QAbstractItemView::SelectRows);
    failing_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    failing_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    failing_->horizontalHeader()->setStretchLastSection(true);
    failing_->setToolTip(tr("Pairs that did not pass; double-click one to open its run."));
    // One line above the pairs, not a panel beside them: with no plot the failing pairs take the width
    // (as a panel the sentence took half of it and squeezed the table to a sliver on a laptop's screen).
    eval_note_ = new QLabel(tr("An eval sweep times nothing, so it has no fast_p curve: fast_0, the share of "
                               "attempted pairs that passed, is in the table above (pkbw sweep --mode perf "
                               "draws fast_p)."),
                            this);
    eval_note_->setObjectName(QStringLiteral("sweepEvalNote"));
    eval_note_->setWordWrap(true);
    eval_note_->hide();
    lower->addWidget(plot_);
    lower->addWidget(failing_);
    lower->setStretchFactor(0, 1);
    lower->setStretchFactor(1, 1);
    auto* below = new QWidget(split);
    auto* below_layout = new QVBoxLayout(below);
    below_layout->setContentsMargins(0, 0, 0, 0);
    below_layout->addWidget(eval_note_);
    below_layout->addWidget(lower, 1);
    split->addWidget(generations_);
    split->addWidget(below);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    layout->addWidget(split, 1);

    refresh_ = new QTimer(this);
    refresh_->setInterval(2000);
    connect(refresh_, &QTimer::timeout, this, &SweepsView::reload);
    connect(picker_, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (!filling_picker_ && index >= 0) {
            show_sweep(picker_->itemData(index).toLongLong());
        }
    });
    connect(failing_, &QTableWidget::cellDoubleClicked, this,
            [this](int row, int) { activate_failing(row); });
    connect(failing_, &QTableWidget::cellActivated, this, [this](int row, int) { activate_failing(row); });
}

void SweepsView::set_store(const QString& path) {
    store_ = path;
    sweep_id_ = 0;
    load_list(0);
}

void SweepsView::set_refresh_interval(int ms) {
    if (ms <= 0) {
        refresh_->stop();
        refresh_->setInterval(0);
        return;
    }
    refresh_->setInterval(ms);
}

bool SweepsView::refreshing() const {
    return refresh_->isActive();
}

void SweepsView::load_list(qint64 select) {
    const quint64 request = ++request_;
    run_in_background(
        this,
        [p = to_path(store_)] {
            const Store store = Store::open_read_only(p);
            return SweepList{list_sweeps(store)};
        },
        [this, request, select](Loaded<SweepList> r) {
            if (request != request_) {
                return;
            }
            filling_picker_ = true;
            picker_->clear();
            if (!r.ok()) {
                header_->setText(tr("Could not read the sweeps: %1").arg(r.error));
                filling_picker_ = false;
                emit loaded();
                return;
            }
            int index = 0;
            for (const SweepRecord& s : r.value.sweeps) {
                const QString name =
                    s.name.empty() ? QString() : QStringLiteral(" '%1'").arg(to_qstring(s.name));
                picker_->addItem(tr("sweep %1%2: %3, W=%4, %5, %6")
                                     .arg(s.id)
                                     .arg(name, to_qstring(s.mode))
                                     .arg(s.world_size)
                                     .arg(to_qstring(s.backend), to_qstring(s.status)),
                                 QVariant::fromValue<qlonglong>(s.id));
                if (s.id == select) {
                    index = picker_->count() - 1;
                }
            }
            filling_picker_ = false;
            if (r.value.sweeps.empty()) {
                header_->setText(tr("No sweep in this store (pkbw sweep makes one; docs/sweeps.md)."));
                show_table({});
                emit loaded();
                return;
            }
            picker_->setCurrentIndex(index);
            show_sweep(picker_->itemData(index).toLongLong());
        });
}

void SweepsView::show_sweep(qint64 sweep_id) {
    if (store_.isEmpty() || sweep_id <= 0) {
        return;
    }
    if (sweep_id != sweep_id_) {
        const int index = picker_->findData(QVariant::fromValue<qlonglong>(sweep_id));
        if (index >= 0 && index != picker_->currentIndex()) {
            filling_picker_ = true;
            picker_->setCurrentIndex(index);
            filling_picker_ = false;
        }
    }
    sweep_id_ = sweep_id;
    const quint64 request = ++request_;
    run_in_background(
        this,
        [p = to_path(store_), sweep_id] {
            const Store store = Store::open_read_only(p);
            return std::pair{sweep_table(store, sweep_id), store_generation_labels(store)};
        },
        [this, request](Loaded<std::pair<SweepTable, std::vector<std::string>>> r) {
            if (request != request_) {
                return;
            }
            if (!r.ok()) {
                header_->setText(tr("Could not read sweep %1: %2").arg(sweep_id_).arg(r.error));
                refresh_->stop();
                emit loaded();
                return;
            }
            store_generations_ = std::move(r.value.second);
            show_table(r.value.first);
            emit loaded();
        });
}

void SweepsView::reload() {
    if (sweep_id_ > 0) {
        show_sweep(sweep_id_);
    } else if (!store_.isEmpty()) {
        load_list(0);
    }
}

void SweepsView::show_table(const SweepTable& table) {
    table_ = table;
    const bool perf = table.sweep.mode == status::kModePerf;
    const auto ps = default_fast_p();
    const QStringList headers = sweep_header_cells(ps);
    generations_->clear();
    generations_->setColumnCount(static_cast<int>(headers.size()));
    generations_->setHorizontalHeaderLabels(headers);
    generations_->setRowCount(static_cast<int>(table.generations.size()));
    for (int g = 0; g < static_cast<int>(table.generations.size()); ++g) {
        const QStringList cells = sweep_row_cells(table.generations[static_cast<std::size_t>(g)], perf, ps);
        for (int c = 0; c < cells.size(); ++c) {
            generations_->setItem(g, c, cell(cells[c]));
        }
    }

    fill_failing(table);

    progress_->setRange(0, std::max(1, table.total));
    progress_->setValue(table.done);
    progress_->setFormat(table.total > 0 ? tr("%v / %m pairs judged") : tr("no sweep"));
    const bool running =
        table.sweep.status == sweep_status::kRunning || table.sweep.status == sweep_status::kSubmitted;
    if (table.sweep.id > 0) {
        const auto& s = table.sweep;
        header_->setText(
            tr("Sweep %1%2: %3, W=%4, backend %5, %6 — %7/%8 pairs judged; created %9, updated %10%11")
                .arg(s.id)
                .arg(s.name.empty() ? QString() : QStringLiteral(" '%1'").arg(to_qstring(s.name)))
                .arg(to_qstring(s.mode))
                .arg(s.world_size)
                .arg(to_qstring(s.backend), to_qstring(s.status))
                .arg(table.done)
                .arg(table.total)
                .arg(format_time(s.created_at), format_time(s.updated_at))
                .arg(running ? tr(" (re-read every %1 s while running)").arg(refresh_->interval() / 1000.0)
                             : QString()));
    }
    if (running && refresh_->interval() > 0 && !refresh_->isActive()) {
        refresh_->start();
    } else if (!running) {
        refresh_->stop();
    }

    plot_fast_p(table, perf);
}

// Every pair that did not pass: its generation, problem, status, run and the message's headline.
void SweepsView::fill_failing(const SweepTable& table) {
    failing_->setRowCount(0);
    for (const SweepPairView& v : table.pairs) {
        if (v.status == status::kPass) {
            continue;
        }
        const int row = failing_->rowCount();
        failing_->insertRow(row);
        // The model's short name (a folder name such as solutions_cuda_bf16_h100_8_<provider>_<model> is
        // wide enough to push the other columns out of view), the folder in the tooltip.
        auto* generation =
            cell(to_qstring(short_generation_label(parse_generation_label(v.pair.generation_label))));
        generation->setToolTip(to_qstring(v.pair.generation_label));
        failing_->setItem(row, 0, generation);
        failing_->setItem(row, 1, cell(to_qstring(v.pair.problem_stem)));
        auto* status = cell(to_qstring(v.status));
        if (auto s = parse_run_status(v.status)) {
            status->setForeground(status_color(*s));
        }
        failing_->setItem(row, 2, status);
        auto* run = cell(v.pair.run_id ? QString::number(*v.pair.run_id) : QStringLiteral("-"));
        run->setData(Qt::UserRole, QVariant::fromValue<qlonglong>(v.pair.run_id.value_or(0)));
        failing_->setItem(row, 3, run);
        // The exception's own line where a solution raised (not the traceback's first frames); the whole
        // message on hover.
        auto* message = cell(to_qstring(pair_message_headline(v.pair.message, 300)));
        message->setToolTip(to_qstring(v.pair.message.substr(0, 4000)));
        failing_->setItem(row, 4, message);
    }
}

// The fast_p curve of each generation (for an eval sweep, its correct share at p = 0 alone).
void SweepsView::plot_fast_p(const SweepTable& table, bool perf) {
    // An eval sweep measures no speedup: a p axis with a dot at 0 would only repeat fast_0.
    plot_->setVisible(perf);
    eval_note_->setVisible(!perf && table.sweep.id > 0);
    plot_->clearGraphs();
    double p_end = 2;
    for (const auto& g : table.generations) {
        for (double s : g.speedups) {
            p_end = std::max(p_end, s * 1.1);
        }
        for (double b : g.fast_bounds) {
            p_end = std::max(p_end, b * 1.1);
        }
    }
    for (int g = 0; g < static_cast<int>(table.generations.size()); ++g) {
        const auto& row = table.generations[static_cast<std::size_t>(g)];
        QCPGraph* graph = plot_->addGraph();
        graph->setName(to_qstring(row.label));
        graph->setLineStyle(QCPGraph::lsStepLeft);
        // The generation's colour on every tab: its rank among the store's generations, as on the
        // Generations tab (generation_pen).
        graph->setPen(generation_pen(store_generations_, row.label));
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
        // An eval sweep measures no speedup: its curve is the correct share at p = 0 alone.
        const auto steps = sweep_fast_p_steps(row, p_end);
        for (std::size_t i = 0; i < steps.size() && (perf || i == 0); ++i) {
            graph->addData(steps[i].first, steps[i].second);
        }
    }
    plot_->legend->setVisible(plot_->graphCount() > 0);
    // An eval sweep has the correct share at p = 0 alone: no p axis to speak of.
    plot_->xAxis->setRange(perf ? 0 : -0.5, perf ? p_end : 0.5);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString SweepsView::header_text() const {
    return header_->text();
}

void SweepsView::activate_failing(int row) {
    if (row < 0 || row >= failing_->rowCount()) {
        return;
    }
    const qint64 run_id = failing_->item(row, 3)->data(Qt::UserRole).toLongLong();
    if (run_id > 0) {
        emit run_activated(run_id);
    }
}

} // namespace pkbw::app
