#include "tolerancemodel.h"

#include "qtconvert.h"

namespace pkbw::app {

ToleranceModel::ToleranceModel(QObject* parent)
    : QAbstractTableModel(parent) {}

void ToleranceModel::set_rows(std::vector<Rescored> rows) {
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
}

int ToleranceModel::pass_count() const {
    int n = 0;
    for (const auto& r : rows_) {
        n += r.pass ? 1 : 0;
    }
    return n;
}

int ToleranceModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ToleranceModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ToleranceModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
        return {};
    }
    const Rescored& r = rows_[static_cast<std::size_t>(index.row())];
    const QColor verdict_color = r.tie_explained ? tie_explained_color() : ratio_color(r.pass, r.worst_ratio);
    if (role == Qt::BackgroundRole && index.column() == Verdict) {
        return verdict_color;
    }
    if (role == Qt::ForegroundRole && index.column() == Verdict) {
        return text_color_on(verdict_color);
    }
    if (role == Qt::ToolTipRole && !r.first_error.empty()) {
        return to_qstring(r.first_error); // the table hides its column: the row's tooltip has it
    }
    if (role != Qt::DisplayRole) {
        return {};
    }
    switch (index.column()) {
    case Trial:
        return r.trial;
    case Rank:
        return r.rank;
    case Verdict:
        return r.pass ? tr("pass") : r.tie_explained ? tr("fail (tie-explained)") : tr("fail");
    case Mismatches:
        return QVariant::fromValue<qint64>(r.mismatch_count);
    case WorstRatio:
        return format_ratio(r.worst_ratio);
    case MinAtol:
        return format_ratio(r.min_passing_atol);
    case Message:
        return to_qstring(r.first_error);
    }
    return {};
}

QVariant ToleranceModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == MinAtol) {
        return tr("The smallest atol at which this rank-trial passes, at the current rtol");
    }
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    static const char* const names[] = {"Trial",       "Rank",     "Verdict",    "Mismatches",
                                        "Worst ratio", "Min atol", "First error"};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

} // namespace pkbw::app
