#include "runsbrowser.h"

#include "background.h"
#include "qtconvert.h"
#include "runsmodel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace pkbw::app {
namespace {

std::optional<std::string> chosen(const QComboBox* box) {
    if (box->currentIndex() <= 0) {
        return std::nullopt;
    }
    return to_std(box->currentText());
}

std::optional<std::string> typed(const QLineEdit* edit) {
    const QString t = edit->text().trimmed();
    return t.isEmpty() ? std::nullopt : std::optional<std::string>(to_std(t));
}

} // namespace

RunsBrowser::RunsBrowser(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* filters = new QHBoxLayout;
    auto make_combo = [&](const QString& any, const QString& name) {
        auto* box = new QComboBox(this);
        box->setObjectName(name);
        box->addItem(any);
        box->setMinimumContentsLength(12);
        box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        filters->addWidget(box);
        connect(box, &QComboBox::currentIndexChanged, this, &RunsBrowser::apply_filter);
        return box;
    };
    problem_ = make_combo(tr("any problem"), QStringLiteral("problemFilter"));
    generation_ = make_combo(tr("any generation"), QStringLiteral("generationFilter"));
    backend_ = make_combo(tr("any backend"), QStringLiteral("backendFilter"));
    status_ = make_combo(tr("any status"), QStringLiteral("statusFilter"));
    auto make_edit = [&](const QString& placeholder, const QString& name) {
        auto* edit = new QLineEdit(this);
        edit->setObjectName(name);
        edit->setPlaceholderText(placeholder);
        edit->setClearButtonEnabled(true);
        filters->addWidget(edit);
        return edit;
    };
    from_ = make_edit(tr("from (2026-07-01)"), QStringLiteral("fromFilter"));
    to_ = make_edit(tr("before (2026-08)"), QStringLiteral("toFilter"));
    text_ = make_edit(tr("search…"), QStringLiteral("textFilter"));
    from_->setMaximumWidth(140);
    to_->setMaximumWidth(140);
    // Typing re-queries after a pause, not on every key.
    auto* debounce = new QTimer(this);
    debounce->setSingleShot(true);
    debounce->setInterval(300);
    connect(debounce, &QTimer::timeout, this, &RunsBrowser::apply_filter);
    for (QLineEdit* e : {from_, to_, text_}) {
        connect(e, &QLineEdit::textChanged, debounce, qOverload<>(&QTimer::start));
    }
    layout->addLayout(filters);

    model_ = new RunsModel(this);
    view_ = new QTableView(this);
    view_->setObjectName(QStringLiteral("runsTable"));
    view_->setModel(model_);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    view_->setAlternatingRowColors(true);
    view_->verticalHeader()->hide();
    view_->verticalHeader()->setDefaultSectionSize(22);
    view_->horizontalHeader()->setStretchLastSection(true);
    view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    view_->horizontalHeader()->setSortIndicator(RunsModel::Started, Qt::DescendingOrder);
    view_->setSortingEnabled(true);
    const int widths[] = {50, 150, 160, 220, 70, 60, 50, 100, 75};
    for (int c = 0; c < static_cast<int>(std::size(widths)); ++c) {
        view_->setColumnWidth(c, widths[c]);
    }
    view_->setColumnWidth(RunsModel::Speedup, speedup_column_width(true));
    layout->addWidget(view_, 1);
    count_ = new QLabel(this);
    // Wrapped: a long line here (the empty store's guidance, an error naming the file) set the window's
    // minimum width while it showed, and a window never shrinks back (1409 px on a 1366 px laptop).
    count_->setWordWrap(true);
    count_->setObjectName(QStringLiteral("runCount"));
    layout->addWidget(count_);

    connect(view_, &QTableView::activated, this,
            [this](const QModelIndex& index) { emit run_activated(model_->run_id(index.row())); });
    connect(model_, &RunsModel::page_loaded, this, &RunsBrowser::update_count);
    connect(model_, &RunsModel::page_loaded, this, &RunsBrowser::restore_place);
    connect(model_, &RunsModel::page_loaded, this, &RunsBrowser::fit_speedup_column);
    connect(model_, &RunsModel::modelReset, this, &RunsBrowser::update_count);
    connect(model_, &RunsModel::load_failed, this, [this](const QString& message) {
        count_->setText(tr("Could not read the store: %1").arg(message));
    });
}

// The Speedup column holds verdict and interval, and PKB's figure when it points the other way: as wide
// as the widest such cell in this font. A list with no speedup at all (an eval sweep's 82 runs) gets
// the header's width, so that the problem and summary columns have the room.
int RunsBrowser::speedup_column_width(bool any_speedup) const {
    const QString widest =
        any_speedup ? QStringLiteral("1.131× ambiguous [0.850–1.415] ≠ PKB 0.692×")
                    : model_->headerData(RunsModel::Speedup, Qt::Horizontal, Qt::DisplayRole).toString();
    return view_->fontMetrics().horizontalAdvance(widest) + (any_speedup ? 16 : 32);
}

void RunsBrowser::fit_speedup_column() {
    bool any = false;
    for (int row = 0; row < model_->rowCount() && !any; ++row) {
        any = !model_->index(row, RunsModel::Speedup).data().toString().isEmpty();
    }
    // Only a width of ours is changed: one the user dragged stays.
    const int now = view_->columnWidth(RunsModel::Speedup);
    if (now == speedup_column_width(true) || now == speedup_column_width(false)) {
        view_->setColumnWidth(RunsModel::Speedup, speedup_column_width(any));
    }
}

void RunsBrowser::set_store(const QString& path) {
    place_.pending = false; // another store: nothing to come back to
    model_->set_store(path);
    load_choices();
}

void RunsBrowser::refresh() {
    const QModelIndex current = view_->currentIndex();
    place_.pending = true;
    place_.selected_run = current.isValid() ? model_->run_id(current.row()) : 0;
    place_.rows = model_->rowCount();
    place_.scroll = view_->verticalScrollBar()->value();
    model_->reload();
    load_choices();
}

void RunsBrowser::restore_place() {
    if (!place_.pending) {
        return;
    }
    if (model_->rowCount() < place_.rows && model_->canFetchMore({})) {
        model_->fetchMore({}); // the next page_loaded comes back here
        return;
    }
    place_.pending = false;
    for (int row = 0; place_.selected_run > 0 && row < model_->rowCount(); ++row) {
        if (model_->run_id(row) == place_.selected_run) {
            const QModelIndex index = model_->index(row, std::max(view_->currentIndex().column(), 0));
            view_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect |
                                                                QItemSelectionModel::Rows);
            break;
        }
    }
    view_->verticalScrollBar()->setValue(place_.scroll);
}

void RunsBrowser::load_choices() {
    const QString path = model_->store_path();
    if (path.isEmpty()) {
        return;
    }
    using Choices = std::array<std::vector<std::string>, 4>;
    run_in_background(
        this,
        [p = to_path(path)] {
            const Store store = Store::open_read_only(p);
            return Choices{store.distinct_values(RunField::Problem),
                           store.distinct_values(RunField::Generation),
                           store.distinct_values(RunField::Backend), store.distinct_values(RunField::Status)};
        },
        [this](Loaded<Choices> r) {
            if (!r.ok()) {
                return;
            }
            QComboBox* boxes[] = {problem_, generation_, backend_, status_};
            for (int i = 0; i < 4; ++i) {
                const QSignalBlocker block(boxes[i]);
                const QString keep = boxes[i]->currentIndex() > 0 ? boxes[i]->currentText() : QString();
                while (boxes[i]->count() > 1) {
                    boxes[i]->removeItem(1);
                }
                for (const auto& v : r.value[static_cast<std::size_t>(i)]) {
                    if (!v.empty()) {
                        boxes[i]->addItem(to_qstring(v));
                    }
                }
                const int at = keep.isEmpty() ? 0 : boxes[i]->findText(keep);
                boxes[i]->setCurrentIndex(std::max(at, 0));
            }
        });
}

void RunsBrowser::apply_filter() {
    RunFilter f;
    f.problem_stem = chosen(problem_);
    f.generation_label = chosen(generation_);
    f.backend = chosen(backend_);
    if (auto s = chosen(status_)) {
        f.status = parse_run_status(*s);
    }
    f.started_from = typed(from_);
    f.started_to = typed(to_);
    f.text = typed(text_);
    place_.pending = false;
    model_->set_filter(f);
}

void RunsBrowser::update_count() {
    if (model_->store_path().isEmpty()) {
        count_->setText(tr("No store open (File › Open store)."));
        return;
    }
    const qint64 total = model_->total(), loaded = model_->rowCount();
    const RunFilter& f = model_->filter();
    const bool unfiltered = !f.problem_stem && !f.problem_id && !f.sweep_id && !f.generation_label &&
                            !f.backend && !f.status && !f.started_from && !f.started_to && !f.text;
    if (total == 0 && unfiltered && !model_->loading()) {
        // A first start: say how runs get here.
        count_->setText(tr("No runs in this store yet. Start one from the Launch tab (Ctrl+L), or run "
                           "`pkbw eval --problem 1_allreduce --solution host --solutions-dir "
                           "samples/solutions_host_f32_none_samples_baseline --backend host --store %1`.")
                            .arg(model_->store_path()));
        return;
    }
    count_->setText(loaded < total ? tr("%1 runs match; %2 loaded (scroll for more)").arg(total).arg(loaded)
                                   : tr("%1 runs match").arg(total));
}

} // namespace pkbw::app
