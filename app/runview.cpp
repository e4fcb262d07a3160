#include "runview.h"

#include "background.h"
#include "correctnessmodel.h"
#include "heatmapview.h"
#include "pkbw/core/run_archive.h"
#include "qtconvert.h"
#include "runwarnings.h"
#include "tolerancemodel.h"

#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPainter>
#include <QPushButton>
#include <QSplitter>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <filesystem>

namespace pkbw::app {
namespace {

// The selected cell keeps its verdict colour: selection is drawn as a frame, not a fill.
class FramedSelectionDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override {
        QStyleOptionViewItem plain(option);
        const bool selected = option.state & QStyle::State_Selected;
        plain.state &= ~(QStyle::State_Selected | QStyle::State_HasFocus);
        QStyledItemDelegate::paint(painter, plain, index);
        if (selected) {
            painter->save();
            painter->setPen(QPen(option.palette.color(QPalette::Highlight), 3));
            painter->drawRect(option.rect.adjusted(1, 1, -2, -2));
            painter->restore();
        }
    }
};

} // namespace

QString no_outputs_text(const RunData& data) {
    // The first outputs file the run recorded (native runs record the failing trials' safetensors,
    // import-pkb every .pt file PKB saved); its path says where the explorer looked.
    const ArtifactRow* recorded = nullptr;
    for (const ArtifactRow& a : data.artifacts) {
        if (a.kind.rfind("outputs", 0) == 0) {
            recorded = &a;
            break;
        }
    }
    const RunRecord& run = data.run;
    const bool imported = (run.backend.rfind("pkb-", 0) == 0 && run.command_line.size() > 1 &&
                           run.command_line[1] == "import-pkb") ||
                          (recorded && recorded->path.ends_with(".pt"));
    if (imported) {
        // --keep-outputs is pkbw's flag: it means nothing for a run PKB made.
        return recorded ? RunView::tr("PKB's .pt outputs that import-pkb recorded for this run are not on "
                                      "disk (%1, …): the PKB logs folder was moved or deleted after the "
                                      "import, and the store keeps its paths, not the files.")
                              .arg(to_qstring(recorded->path))
                        : RunView::tr("The imported PKB logs held no .pt outputs for this run: only the "
                                      "stored error maps can be shown.");
    }
    if (recorded) {
        return RunView::tr("The outputs files this run recorded are not on disk (%1, …): its run folder was "
                           "deleted, or not copied with the store.")
            .arg(to_qstring(recorded->path));
    }
    return RunView::tr("No outputs files found for this run (pkbw keeps them for failing trials unless "
                       "--keep-outputs).");
}

QString RunView::rescore_text() const {
    return rescore_summary_->text();
}

RunView::RunView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    header_ =
        new QLabel(tr("No run open. Double-click a run in the Runs tab, or File › Open run folder."), this);
    header_->setObjectName(QStringLiteral("runHeader"));
    header_->setWordWrap(true);
    header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(header_);

    auto* split = new QSplitter(Qt::Horizontal, this);
    auto* left = new QWidget(split);
    auto* left_layout = new QVBoxLayout(left);
    left_layout->setContentsMargins(0, 0, 0, 0);
    left_layout->addWidget(new QLabel(tr("Correctness (rank × trial; worst error ratio, > 1 fails)"), left));
    grid_ = new QTableView(left);
    grid_->setObjectName(QStringLiteral("correctnessGrid"));
    grid_model_ = new CorrectnessModel(this);
    grid_->setModel(grid_model_);
    grid_->setSelectionMode(QAbstractItemView::SingleSelection);
    grid_->setItemDelegate(new FramedSelectionDelegate(grid_));
    grid_->horizontalHeader()->setDefaultSectionSize(52);
    grid_->verticalHeader()->setDefaultSectionSize(24);
    left_layout->addWidget(grid_, 2);
    left_layout->addWidget(new QLabel(tr("Outputs of the selected cell"), left));
    tensors_ = new QListWidget(left);
    tensors_->setObjectName(QStringLiteral("tensorList"));
    left_layout->addWidget(tensors_, 1);

    auto* tol_box = new QGroupBox(tr("Tolerance explorer"), left);
    auto* tol_layout = new QVBoxLayout(tol_box);
    auto* form = new QFormLayout;
    atol_ = new QDoubleSpinBox(tol_box);
    rtol_ = new QDoubleSpinBox(tol_box);
    for (QDoubleSpinBox* box : {atol_, rtol_}) {
        box->setDecimals(8);
        box->setRange(0, 1e6);
        box->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
        box->setValue(pkbw::kPkbTolerance);
    }
    form->addRow(tr("atol"), atol_);
    form->addRow(tr("rtol"), rtol_);
    tol_layout->addLayout(form);
    rescore_summary_ = new QLabel(tol_box);
    rescore_summary_->setObjectName(QStringLiteral("rescoreSummary"));
    rescore_summary_->setWordWrap(true);
    tol_layout->addWidget(rescore_summary_);
    auto* tol_table = new QTableView(tol_box);
    tolerance_model_ = new ToleranceModel(this);
    tol_table->setModel(tolerance_model_);
    tol_table->setObjectName(QStringLiteral("toleranceTable"));
    tol_table->verticalHeader()->hide();
    // The figures sized to their contents and the first error under the table, whole, for the
    // current row (else the first failing one): a 1024x1024 mismatch's figures fill the pane, and a
    // message column squeezed beside them read "st err" (review defect 24).
    tol_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    tol_table->horizontalHeader()->setSectionResizeMode(ToleranceModel::MinAtol, QHeaderView::Stretch);
    tol_table->setColumnHidden(ToleranceModel::Message, true);
    tol_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    tol_table->setWordWrap(false);
    tol_layout->addWidget(tol_table);
    tolerance_error_ = new QLabel(tol_box);
    tolerance_error_->setObjectName(QStringLiteral("toleranceFirstError"));
    tolerance_error_->setWordWrap(true);
    tolerance_error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    tol_layout->addWidget(tolerance_error_);
    connect(tol_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { show_first_error(current.row()); });
    connect(tolerance_model_, &QAbstractItemModel::modelReset, this, [this] { show_first_error(-1); });
    left_layout->addWidget(tol_box, 2);

    heatmaps_ = new HeatmapView(split);
    split->addWidget(left);
    split->addWidget(heatmaps_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    // A third for the grid and the explorer, two for the maps, from the start: the maps are hidden
    // until a cell is chosen, and their pane must not be sized from an empty view.
    split->setSizes({500, 1000});
    layout->addWidget(split, 1);

    rescore_timer_ = new QTimer(this);
    rescore_timer_->setSingleShot(true);
    rescore_timer_->setInterval(250);
    connect(rescore_timer_, &QTimer::timeout, this, [this] {
        rescore();
        load_heatmaps();
    });
    for (QDoubleSpinBox* box : {atol_, rtol_}) {
        connect(box, &QDoubleSpinBox::valueChanged, rescore_timer_, qOverload<>(&QTimer::start));
    }
    connect(grid_->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& current) {
                if (current.isValid()) {
                    select_cell(current.row(), current.column());
                }
            });
    connect(tensors_, &QListWidget::currentRowChanged, this, &RunView::select_tensor);
}

void RunView::open_run(qint64 run_id) {
    header_->setText(tr("Loading run %1…").arg(run_id));
    const auto path = to_path(store_);
    run_in_background(
        this, [path, run_id] { return std::make_shared<const RunData>(load_run(path, run_id)); },
        [this](Loaded<std::shared_ptr<const RunData>> r) {
            if (!r.ok()) {
                header_->setText(tr("Could not load the run: %1").arg(r.error));
                heatmaps_->clear(); // no maps of an earlier run, and no empty axes
                emit load_failed(r.error);
                return;
            }
            set_data(r.value);
        });
}

void RunView::open_folder(const QString& folder) {
    header_->setText(tr("Comparing the outputs in %1…").arg(folder));
    const auto path = to_path(folder);
    run_in_background(
        this, [path] { return std::make_shared<const RunData>(load_run_folder(path)); },
        [this](Loaded<std::shared_ptr<const RunData>> r) {
            if (!r.ok()) {
                header_->setText(tr("Could not open the run folder: %1").arg(r.error));
                heatmaps_->clear();
                emit load_failed(r.error);
                return;
            }
            set_data(r.value);
        });
}

void RunView::set_data(std::shared_ptr<const RunData> data) {
    data_ = std::move(data);
    rank_ = trial_ = -1;
    tensor_.clear();
    tensors_->clear();
    heatmaps_->clear(tr("Select a rank and trial in the grid, then an output."));
    grid_model_->set_run(data_);
    header_->setText(header_text());
    header_->setToolTip(data_ ? flags_tooltip(split_summary(data_->run.summary, data_->flags)) : QString());
    {
        const QSignalBlocker a(atol_), b(rtol_);
        atol_->setValue(data_->run.atol);
        rtol_->setValue(data_->run.rtol);
    }
    tolerance_model_->set_rows({});
    rescore_summary_->clear();
    emit run_loaded(data_);
    // Start where the trouble is: the first failing cell, else rank 0 trial 0.
    int pick_rank = 0, pick_trial = 0;
    bool found = false;
    for (int t = 0; t < grid_model_->columnCount() && !found; ++t) {
        for (int r = 0; r < grid_model_->rowCount() && !found; ++r) {
            if (grid_model_->cell(r, t).state == CellState::Fail) {
                pick_rank = r;
                pick_trial = t;
                found = true;
            }
        }
    }
    if (grid_model_->rowCount() > 0 && grid_model_->columnCount() > 0) {
        grid_->setCurrentIndex(grid_model_->index(pick_rank, pick_trial));
    }
    rescore();
}

QString RunView::header_text() const {
    if (!data_) {
        return {};
    }
    const RunRecord& r = data_->run;
    // Fields a run may lack (dtype) are left out rather than shown as an empty " ·  · ".
    QStringList fields{tr("<b>Run %1</b>").arg(r.id),
                       to_qstring(r.problem_stem).toHtmlEscaped(),
                       mode_text(r.mode),
                       to_qstring(r.backend),
                       r.world_size == 1 ? tr("1 rank") : tr("%1 ranks").arg(r.world_size),
                       to_qstring(r.dtype).toHtmlEscaped(),
                       QStringLiteral("<span style='color:%1'><b>%2</b></span>")
                           .arg(status_color(r.status).name(), status_text(r.status))};
    fields.removeAll(QString());
    QString text = fields.join(QStringLiteral(" · "));
    if (!r.generation.label.empty()) {
        const bool generation = r.generation.parsed || r.generation.label.rfind("solutions_", 0) == 0;
        text += generation ? tr("<br>generation %1").arg(to_qstring(r.generation.label).toHtmlEscaped())
                           : tr("<br>ad-hoc candidate (its folder %1 is no generation folder)")
                                 .arg(to_qstring(r.generation.label).toHtmlEscaped());
    }
    const int trials = data_->trial_count();
    text += (trials == 1 ? tr("<br>atol %1, rtol %2 · %3 trial") : tr("<br>atol %1, rtol %2 · %3 trials"))
                .arg(r.atol)
                .arg(r.rtol)
                .arg(trials);
    if (!r.summary.empty()) {
        // A multi-line summary (a Python traceback, with its carets) keeps its lines and columns.
        const QString summary = to_qstring(r.summary);
        const qsizetype nl = summary.indexOf(QLatin1Char('\n'));
        if (nl < 0) {
            // The verdict, then its flags grouped by severity, suspicious first (reasons on hover).
            const SplitSummary split = split_summary(r.summary, data_->flags);
            text += QStringLiteral(" · ") + split.verdict.toHtmlEscaped();
            if (!split.flags.empty()) {
                text += QStringLiteral("<br>") + flags_html(split);
            }
        } else {
            text +=
                QStringLiteral(" · ") + summary.left(nl).toHtmlEscaped() +
                QStringLiteral("<pre style='margin:2px 0'>%1</pre>").arg(summary.mid(nl + 1).toHtmlEscaped());
        }
    }
    for (const std::string& what : data_->unreadable) {
        text +=
            QStringLiteral("<br><span style='color:#c07a10'>%1</span>")
                .arg(tr("not shown, the store could not give it: %1").arg(to_qstring(what).toHtmlEscaped()));
    }
    // Failures after a rank's last trial result have no cell in the grid (its cells keep their
    // verdicts); they are listed here.
    for (const RankResultRow& row : data_->ranks) {
        if (row.trial == kAfterLastResult) {
            text += tr("<br>rank %1: %2 after its last trial result, in phase %3")
                        .arg(row.rank)
                        .arg(outcome_text(row.outcome), to_qstring(row.phase).toHtmlEscaped());
        }
    }
    return text;
}

QStringList RunView::tensor_names() const {
    QStringList names;
    for (int i = 0; i < tensors_->count(); ++i) {
        names << tensors_->item(i)->data(Qt::UserRole).toString();
    }
    return names;
}

void RunView::select_cell(int rank, int trial) {
    if (!data_ || (rank == rank_ && trial == trial_)) {
        return;
    }
    rank_ = rank;
    trial_ = trial;
    const QSignalBlocker block(tensors_);
    tensors_->clear();
    int pick = -1;
    for (const TensorResultRow* t : data_->tensors_of(trial, rank)) {
        const bool tie_explained = t->ties && t->ties->explained();
        const QString verdict = t->pass ? tr("pass")
                                : tie_explained
                                    ? tr("FAIL (tie-explained), ratio %1").arg(format_ratio(t->worst_ratio))
                                    : tr("FAIL, ratio %1").arg(format_ratio(t->worst_ratio));
        const QString lengths = format_lengths(t->length_bound, t->ref_length, t->cand_length);
        auto* item = new QListWidgetItem(
            tr("%1  %2 %3  %4")
                    .arg(to_qstring(t->name), to_qstring(t->cand_dtype), format_shape(t->cand_shape),
                         verdict) +
                (lengths.isEmpty() ? QString() : QStringLiteral("  (") + lengths + QLatin1Char(')')),
            tensors_);
        item->setData(Qt::UserRole, to_qstring(t->name));
        item->setForeground(tie_explained ? tie_explained_color()
                            : t->pass     ? status_color(RunStatus::Pass)
                                          : status_color(RunStatus::Mismatch));
        if (t->ties) {
            const QString text = tie_text(*t->ties);
            item->setToolTip(text.isEmpty() ? tr("%n tie row(s): %1", nullptr,
                                                 static_cast<int>(t->ties->named.rows.size()))
                                                  .arg(to_qstring(t->ties->named.rule))
                                            : text);
        }
        if (pick < 0 && !t->pass) {
            pick = tensors_->count() - 1;
        }
    }
    if (tensors_->count() == 0) {
        heatmaps_->clear(tr("rank %1, trial %2: no compared outputs").arg(rank).arg(trial));
        return;
    }
    tensors_->setCurrentRow(pick < 0 ? 0 : pick);
    select_tensor(tensors_->currentRow());
}

void RunView::select_tensor(int row) {
    if (!data_ || row < 0 || row >= tensors_->count()) {
        return;
    }
    tensor_ = tensors_->item(row)->data(Qt::UserRole).toString();
    load_heatmaps();
}

void RunView::load_heatmaps() {
    if (!data_ || tensor_.isEmpty() || rank_ < 0) {
        return;
    }
    const quint64 request = ++heatmap_request_;
    const auto data = data_;
    const int rank = rank_, trial = trial_;
    const std::string name = to_std(tensor_);
    const double atol = atol_->value(), rtol = rtol_->value();
    run_in_background(
        this,
        [=] {
            const auto ref_path = output_path(*data, trial, rank, Side::Reference);
            const auto cand_path = output_path(*data, trial, rank, Side::Candidate);
            HeatmapSet set;
            if (std::filesystem::exists(ref_path) && std::filesystem::exists(cand_path)) {
                // Either format: pkbw's safetensors or an imported PKB run's .pt (never unpickled code).
                const OutputSet ref = read_output_file(ref_path);
                const OutputSet cand = read_output_file(cand_path);
                const Tensor* r = ref.find(name);
                const Tensor* c = cand.find(name);
                if (r && c && r->numel() == c->numel()) {
                    set = compute_heatmaps(*r, *c, atol, rtol);
                    set.title = name;
                    // The tie rows the run's comparison recorded, classified again at these tolerances.
                    for (const TensorResultRow* t : data->tensors_of(trial, rank)) {
                        if (t->name == name) { // the files hold a variable output's valid prefix only
                            set.length_bound = t->length_bound;
                            set.ref_length = t->ref_length;
                            set.cand_length = t->cand_length;
                        }
                        if (t->name == name && t->ties) {
                            set.ties =
                                compare_tensors(*r, *c, CompareOptions{atol, rtol, 1}, name, &t->ties->named)
                                    .ties;
                        }
                    }
                    set.shape = r->shape();
                    return set;
                }
            }
            for (const TensorResultRow* t : data->tensors_of(trial, rank)) {
                if (t->name == name) {
                    return heatmaps_from_row(*t, data->run.atol, data->run.rtol);
                }
            }
            return set;
        },
        [this, request](Loaded<HeatmapSet> r) {
            if (request != heatmap_request_) {
                return;
            }
            if (!r.ok()) {
                heatmaps_->clear(tr("Could not read the outputs: %1").arg(r.error));
            } else {
                heatmaps_->show_set(r.value);
            }
            emit heatmaps_ready();
        });
}

void RunView::set_tolerances(double atol, double rtol) {
    atol_->setValue(atol);
    rtol_->setValue(rtol);
    rescore_timer_->stop();
    rescore();
    load_heatmaps();
}

void RunView::rescore() {
    if (!data_) {
        return;
    }
    const quint64 request = ++rescore_request_;
    const auto data = data_;
    const double atol = atol_->value(), rtol = rtol_->value();
    rescore_summary_->setText(tr("Re-scoring stored outputs at atol %1, rtol %2…").arg(atol).arg(rtol));
    run_in_background(
        this, [=] { return rescore_outputs(*data, atol, rtol); },
        [this, request, atol, rtol](Loaded<std::vector<Rescored>> r) {
            if (request != rescore_request_) {
                return;
            }
            if (!r.ok()) {
                rescore_summary_->setText(tr("Re-scoring failed: %1").arg(r.error));
            } else {
                tolerance_model_->set_rows(std::move(r.value));
                const int total = tolerance_model_->rowCount();
                rescore_summary_->setText(total == 0 ? no_outputs_text(*data_)
                                                     : tr("At atol %1, rtol %2: %3 of %4 rank-trials pass.")
                                                           .arg(atol)
                                                           .arg(rtol)
                                                           .arg(tolerance_model_->pass_count())
                                                           .arg(total));
            }
            emit rescore_ready();
        });
}

void RunView::show_first_error(int row) {
    const ToleranceModel& m = *tolerance_model_;
    if (row < 0 || row >= m.rowCount()) {
        row = -1; // no current row: the first failing one
        for (int r = 0; r < m.rowCount() && row < 0; ++r) {
            if (!m.rows()[static_cast<std::size_t>(r)].pass) {
                row = r;
            }
        }
    }
    if (row < 0 || m.rows()[static_cast<std::size_t>(row)].first_error.empty()) {
        tolerance_error_->clear();
        return;
    }
    const Rescored& r = m.rows()[static_cast<std::size_t>(row)];
    tolerance_error_->setText(
        tr("Trial %1, rank %2: %3").arg(r.trial).arg(r.rank).arg(to_qstring(r.first_error)));
}

QString RunView::first_error_text() const {
    return tolerance_error_->text();
}

} // namespace pkbw::app
