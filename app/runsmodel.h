// The runs table, paged from the store: the model holds only the pages fetched so far; the view's
// fetchMore (scrolling) asks for the next page on a worker thread. Sorting and filtering are done by
// SQL (Store::list_runs), never by a proxy over all rows.
#pragma once

#include "pkbw/core/perf_stats.h"
#include "pkbw/core/store.h"
#include "pkbw/core/sweep_table.h"

#include <QAbstractTableModel>
#include <QString>
#include <vector>

namespace pkbw::app {

class RunsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Id,
        Started,
        Problem,
        Generation,
        Backend,
        Mode,
        Ranks,
        Status,
        Duration,
        Speedup, // pkbw's for perf runs, PKB's for imported PKB runs, with verdict and interval; withheld
                 // ("untrusted", "withheld") unless the run passed cleanly (not sortable: not a runs column)
        Summary,
        ColumnCount
    };
    enum Role { RunIdRole = Qt::UserRole + 1, StatusRole };
    static constexpr int kPageSize = 256;

    explicit RunsModel(QObject* parent = nullptr);

    // An empty path clears the model.
    void set_store(const QString& path);
    QString store_path() const { return store_; }
    void set_filter(const RunFilter& filter);
    const RunFilter& filter() const { return filter_; }
    void reload();

    qint64 total() const { return total_; }
    bool loading() const { return loading_; }
    std::int64_t run_id(int row) const;
    const RunRecord* run_at(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    bool canFetchMore(const QModelIndex& parent) const override;
    void fetchMore(const QModelIndex& parent) override;
    void sort(int column, Qt::SortOrder order) override;

signals:
    // After the first page of a (re)load arrived, or after each further page.
    void page_loaded();
    void load_failed(const QString& message);

private:
    void request_page(bool first);

    QString store_;
    RunFilter filter_;
    RunSort sort_;
    std::vector<RunRecord> rows_;
    // Per row: the run's speedup figures (pkbw's with its interval, verdict and PKB's beside it; for
    // imported PKB runs PKB's alone, pkb_only set). Shown as a result only when speedup_is_result.
    struct RowSpeedup {
        PairOutcome figures;
        bool pkb_only = false;
    };
    std::vector<RowSpeedup> speedups_;
    qint64 total_ = 0;
    bool loading_ = false;
    quint64 generation_ = 0; // results of an older query are dropped
};

} // namespace pkbw::app
