// The rank x trial correctness grid of one run: rows are ranks, columns trials. A cell is pass, fail
// or not run (PKB stops at the first mismatching trial), coloured by its worst error ratio, with the
// comparison statistics in its tooltip. A mismatch confined to the tie rows a problem named is violet
// (tie-explained, docs/comparison.md).
#pragma once

#include "rundata.h"

#include <QAbstractTableModel>
#include <memory>

namespace pkbw::app {

enum class CellState { NotRun, Pass, Fail };

struct CorrectnessCell {
    CellState state = CellState::NotRun;
    double worst_ratio = 0;
    std::int64_t mismatch_count = 0, numel = 0;
    double max_abs_error = 0;
    QString outcome; // rank outcome text ("ok", "crash", ...)
    QString message; // first failure
    int tensor_count = 0;
    // Issue 16: the cell failed only by mismatches, each inside its output's tie rows (still a failure).
    bool tie_explained = false;
    QString tie_text; // what the tie reports of the failing outputs say, empty when none was classified
};

class CorrectnessModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Role { StateRole = Qt::UserRole + 1, WorstRatioRole, TieExplainedRole };
    explicit CorrectnessModel(QObject* parent = nullptr);

    void set_run(std::shared_ptr<const RunData> data);
    const CorrectnessCell& cell(int rank, int trial) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    int ranks_ = 0, trials_ = 0;
    std::vector<CorrectnessCell> cells_; // rank-major
};

} // namespace pkbw::app
