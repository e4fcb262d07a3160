#include "runsmodel.h"

#include "background.h"
#include "qtconvert.h"
#include "runwarnings.h"

namespace pkbw::app {

RunsModel::RunsModel(QObject* parent)
    : QAbstractTableModel(parent) {}

void RunsModel::set_store(const QString& path) {
    store_ = path;
    reload();
}

void RunsModel::set_filter(const RunFilter& filter) {
    filter_ = filter;
    reload();
}

void RunsModel::reload() {
    ++generation_;
    beginResetModel();
    rows_.clear();
    speedups_.clear();
    total_ = 0;
    loading_ = false;
    endResetModel();
    if (!store_.isEmpty()) {
        request_page(true);
    }
}

void RunsModel::request_page(bool first) {
    if (loading_) {
        return;
    }
    loading_ = true;
    const auto path = to_path(store_);
    const RunFilter filter = filter_;
    const RunSort sort = sort_;
    const int offset = static_cast<int>(rows_.size());
    const quint64 generation = generation_;
    struct Page {
        std::vector<RunRecord> rows;
        std::vector<RowSpeedup> speedups;
        qint64 total = -1;
    };
    run_in_background(
        this,
        [=] {
            const Store store = Store::open_read_only(path);
            Page page;
            if (first) {
                page.total = store.count_runs(filter);
            }
            page.rows = store.list_runs(filter, sort, kPageSize, offset);
            for (const RunRecord& r : page.rows) {
                // pkbw's own speedup when the run has one; PKB's only for runs without (imports).
                StoredSpeedup stored;
                if (r.mode == RunMode::Perf || r.backend.rfind("pkb-", 0) == 0) {
                    stored = stored_speedup(store.perf_summaries(r.id));
                }
                RowSpeedup row;
                row.pkb_only = !stored.speedup && stored.pkb_speedup;
                row.figures.correct = speedup_is_result(r.status);
                row.figures.speedup = stored.speedup ? stored.speedup : stored.pkb_speedup;
                if (!row.pkb_only) {
                    row.figures.ci_low = stored.ci_low;
                    row.figures.ci_high = stored.ci_high;
                    row.figures.verdict = stored.verdict;
                    row.figures.pkb_speedup = stored.pkb_speedup;
                }
                page.speedups.push_back(row);
            }
            return page;
        },
        [this, generation](Loaded<Page> result) {
            if (generation != generation_) {
                return;
            }
            if (!result.ok()) {
                loading_ = false;
                emit load_failed(result.error);
                return;
            }
            if (result.value.total >= 0) {
                total_ = result.value.total;
            }
            auto& page = result.value.rows;
            if (!page.empty()) {
                beginInsertRows({}, static_cast<int>(rows_.size()),
                                static_cast<int>(rows_.size() + page.size()) - 1);
                for (auto& r : page) {
                    rows_.push_back(std::move(r));
                }
                speedups_.insert(speedups_.end(), result.value.speedups.begin(), result.value.speedups.end());
                endInsertRows();
            }
            // A short page means the store holds fewer rows than counted (runs deleted meanwhile).
            if (static_cast<int>(page.size()) < kPageSize) {
                total_ = static_cast<qint64>(rows_.size());
            }
            // Only now may the next page be asked for: a view (or the model tester) calling fetchMore
            // from inside beginInsertRows would otherwise fetch at a stale offset.
            loading_ = false;
            emit page_loaded();
        });
}

std::int64_t RunsModel::run_id(int row) const {
    return row >= 0 && row < static_cast<int>(rows_.size()) ? rows_[static_cast<std::size_t>(row)].id : 0;
}

const RunRecord* RunsModel::run_at(int row) const {
    return row >= 0 && row < static_cast<int>(rows_.size()) ? &rows_[static_cast<std::size_t>(row)] : nullptr;
}

int RunsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int RunsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
        return {};
    }
    const RunRecord& r = rows_[static_cast<std::size_t>(index.row())];
    if (role == RunIdRole) {
        return QVariant::fromValue<qint64>(r.id);
    }
    if (role == StatusRole) {
        return status_text(r.status);
    }
    if (role == Qt::ForegroundRole && index.column() == Status) {
        return status_color(r.status);
    }
    if (role == Qt::TextAlignmentRole &&
        (index.column() == Id || index.column() == Ranks || index.column() == Speedup)) {
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    }
    if (role == Qt::ToolTipRole && index.column() == Summary) {
        return flags_tooltip(split_summary(r.summary));
    }
    if (role == Qt::ToolTipRole && index.column() == Generation) {
        if (!r.generation.parsed && r.generation.label.rfind("solutions_", 0) != 0 &&
            !r.generation.label.empty()) {
            return tr("an ad-hoc candidate (its folder: %1), not a generation folder")
                .arg(to_qstring(r.generation.label));
        }
        return to_qstring(r.generation.label);
    }
    const RowSpeedup& speedup = speedups_[static_cast<std::size_t>(index.row())];
    if (index.column() == Speedup && speedup.figures.speedup) {
        const PairOutcome& f = speedup.figures;
        if (role == Qt::ToolTipRole) {
            if (!speedup_is_result(r.status)) {
                return withheld_speedup_tooltip(r.status, f.speedup, f.ci_low, f.ci_high);
            }
            return (speedup.pkb_only ? tr("PKB's speedup (imported run): ")
                                     : tr("pkbw's speedup (perf run): ")) +
                   result_speedup_tooltip(f);
        }
        if (role == Qt::ForegroundRole &&
            (!speedup_is_result(r.status) || pkb_disagrees(f) ||
             (f.verdict && *f.verdict != Verdict::Faster && *f.verdict != Verdict::Slower))) {
            return QColor(Qt::gray); // withheld, disputed, or not told apart from the reference
        }
    }
    if (role != Qt::DisplayRole) {
        return {};
    }
    switch (index.column()) {
    case Id:
        return QVariant::fromValue<qint64>(r.id);
    case Started:
        return format_time(r.started_at);
    case Problem:
        return to_qstring(r.problem_stem);
    case Generation:
        // provider/model when the label is parsed: the distinguishing tail, never elided away.
        if (!r.generation.parsed && r.generation.label.rfind("solutions_", 0) != 0) {
            // A candidate given by its own path: its parent folder ("cuda") is no generation.
            return r.generation.label.empty() ? QString() : tr("ad hoc");
        }
        return to_qstring(r.generation.parsed && !r.generation.model.empty()
                              ? r.generation.provider + "/" + r.generation.model
                              : r.generation.label);
    case Backend:
        return to_qstring(r.backend);
    case Mode:
        return mode_text(r.mode);
    case Ranks:
        return r.world_size;
    case Status:
        return status_text(r.status);
    case Duration: {
        const QDateTime a = to_datetime(r.started_at), b = to_datetime(r.ended_at);
        if (!a.isValid() || !b.isValid()) {
            return {};
        }
        return QString::number(a.msecsTo(b) / 1000.0, 'f', 1) + QStringLiteral(" s");
    }
    case Speedup: {
        if (!speedup.figures.speedup) {
            return {};
        }
        if (!speedup_is_result(r.status)) {
            return withheld_speedup_text(r.status);
        }
        return result_speedup_text(speedup.figures, 3) +
               (speedup.pkb_only ? QStringLiteral(" PKB") : QString());
    }
    case Summary:
        return summary_cell_text(split_summary(r.summary)); // flags by severity, suspicious first
    }
    return {};
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    static const char* const names[] = {"Id",    "Started", "Problem",  "Generation", "Backend", "Mode",
                                        "Ranks", "Status",  "Duration", "Speedup",    "Summary"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

bool RunsModel::canFetchMore(const QModelIndex& parent) const {
    return !parent.isValid() && !loading_ && static_cast<qint64>(rows_.size()) < total_;
}

void RunsModel::fetchMore(const QModelIndex& parent) {
    if (canFetchMore(parent)) {
        request_page(false);
    }
}

void RunsModel::sort(int column, Qt::SortOrder order) {
    static const RunSortColumn map[] = {
        RunSortColumn::Id,      RunSortColumn::StartedAt, RunSortColumn::Problem,   RunSortColumn::Generation,
        RunSortColumn::Backend, RunSortColumn::Mode,      RunSortColumn::WorldSize, RunSortColumn::Status,
        RunSortColumn::EndedAt, RunSortColumn::StartedAt, RunSortColumn::StartedAt};
    if (column < 0 || column >= ColumnCount || column == Speedup) {
        return;
    }
    sort_.column = map[column];
    sort_.descending = order == Qt::DescendingOrder;
    reload();
}

} // namespace pkbw::app
