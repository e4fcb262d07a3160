// Rows of the tolerance explorer: every rank-trial with stored outputs, re-scored at other tolerances.
#pragma once

#include "rundata.h"

#include <QAbstractTableModel>

namespace pkbw::app {

class ToleranceModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Trial, Rank, Verdict, Mismatches, WorstRatio, MinAtol, Message, ColumnCount };
    explicit ToleranceModel(QObject* parent = nullptr);

    void set_rows(std::vector<Rescored> rows);
    const std::vector<Rescored>& rows() const { return rows_; }
    int pass_count() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::vector<Rescored> rows_;
};

} // namespace pkbw::app
