#include "runsmodel.h"

#include "background.h"
#include "qtconvert.h"

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
    pkb_speedup_.clear();
    verdicts_.clear();
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
        std::vector<std::optional<double>> speedups;
        std::vector<bool> pkb;
        std::vector<std::optional<Verdict>> verdicts;
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
                const bool pkb = !stored.speedup && stored.pkb_speedup;
                const std::optional<double> speedup = stored.speedup ? stored.speedup : stored.pkb_speedup;
                page.speedups.push_back(speedup);
                page.pkb.push_back(pkb);
                page.verdicts.push_back(pkb ? std::nullopt : stored.verdict);
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
                pkb_speedup_.insert(pkb_speedup_.end(), result.value.pkb.begin(), result.value.pkb.end());
                verdicts_.insert(verdicts_.end(), result.value.verdicts.begin(), result.value.verdicts.end());
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
        return to_qstring(r.summary);
    }
    if (role == Qt::ToolTipRole && index.column() == Generation) {
        return to_qstring(r.generation.label);
    }
    if (role == Qt::ToolTipRole && index.column() == Speedup &&
        speedups_[static_cast<std::size_t>(index.row())]) {
        return pkb_speedup_[static_cast<std::size_t>(index.row())] ? tr("PKB's speedup (imported run)")
                                                                   : tr("pkbw's speedup (perf run)");
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
        const auto& s = speedups_[static_cast<std::size_t>(index.row())];
        if (!s) {
            return {};
        }
        return speedup_text(*s, verdicts_[static_cast<std::size_t>(index.row())], 3) +
               (pkb_speedup_[static_cast<std::size_t>(index.row())] ? QStringLiteral(" PKB") : QString());
    }
    case Summary:
        return to_qstring(r.summary);
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
