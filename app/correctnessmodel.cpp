#include "correctnessmodel.h"

#include "qtconvert.h"

#include <algorithm>

namespace pkbw::app {

namespace {
QColor cell_color(const CorrectnessCell& c) {
    if (c.state == CellState::NotRun) {
        return not_run_color();
    }
    return c.tie_explained ? tie_explained_color() : ratio_color(c.state == CellState::Pass, c.worst_ratio);
}
} // namespace

CorrectnessModel::CorrectnessModel(QObject* parent)
    : QAbstractTableModel(parent) {}

void CorrectnessModel::set_run(std::shared_ptr<const RunData> data) {
    beginResetModel();
    cells_.clear();
    ranks_ = trials_ = 0;
    if (data) {
        ranks_ = data->world_size();
        trials_ = data->trial_count();
        cells_.assign(static_cast<std::size_t>(ranks_ * trials_), {});
        for (int rank = 0; rank < ranks_; ++rank) {
            for (int trial = 0; trial < trials_; ++trial) {
                CorrectnessCell& c = cells_[static_cast<std::size_t>(rank * trials_ + trial)];
                const RankResultRow* cand = data->rank_result(trial, rank, Side::Candidate);
                const RankResultRow* ref = data->rank_result(trial, rank, Side::Reference);
                const auto tensors = data->tensors_of(trial, rank);
                bool any = !tensors.empty();
                bool pass = true;
                bool only_mismatches = true; // no rank outcome other than ok or mismatch
                for (const RankResultRow* r : {ref, cand}) {
                    if (r && r->outcome != RankOutcome::Skipped) {
                        any = true;
                        if (r->outcome != RankOutcome::Ok) {
                            pass = false;
                            only_mismatches = only_mismatches && r->outcome == RankOutcome::Mismatch;
                            if (c.message.isEmpty()) {
                                c.outcome = outcome_text(r->outcome);
                                c.message = to_qstring(r->message);
                            }
                        }
                    }
                }
                for (const TensorResultRow* t : tensors) {
                    pass = pass && t->pass;
                    c.worst_ratio = std::max(c.worst_ratio, t->worst_ratio);
                    c.mismatch_count += t->mismatch_count;
                    c.numel += t->numel;
                    c.max_abs_error = std::max(c.max_abs_error, t->max_abs_error);
                    if (!t->pass && c.message.isEmpty()) {
                        c.message = to_qstring(t->message);
                    }
                }
                c.tensor_count = static_cast<int>(tensors.size());
                int failing = 0;
                for (const TensorResultRow* t : tensors) {
                    failing += t->pass ? 0 : 1;
                }
                for (const TensorResultRow* t : tensors) {
                    if (!t->pass && t->ties && t->ties->classified) {
                        c.tie_text += (c.tie_text.isEmpty() ? QString() : QStringLiteral("; ")) +
                                      (failing > 1 ? to_qstring(t->name) + QLatin1Char(' ') : QString()) +
                                      tie_text(*t->ties);
                    }
                }
                c.tie_explained = !pass && only_mismatches && failures_tie_explained(tensors);
                if (c.outcome.isEmpty() && cand) {
                    c.outcome = outcome_text(cand->outcome);
                }
                c.state = !any ? CellState::NotRun : (pass ? CellState::Pass : CellState::Fail);
            }
        }
    }
    endResetModel();
}

const CorrectnessCell& CorrectnessModel::cell(int rank, int trial) const {
    return cells_.at(static_cast<std::size_t>(rank * trials_ + trial));
}

int CorrectnessModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ranks_;
}
int CorrectnessModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : trials_;
}

QVariant CorrectnessModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) {
        return {};
    }
    const CorrectnessCell& c = cell(index.row(), index.column());
    switch (role) {
    case StateRole:
        return static_cast<int>(c.state);
    case WorstRatioRole:
        return c.worst_ratio;
    case TieExplainedRole:
        return c.tie_explained;
    case Qt::DisplayRole:
        if (c.state == CellState::NotRun) {
            return QStringLiteral("–");
        }
        if (c.tensor_count == 0) {
            return c.state == CellState::Pass ? QStringLiteral("ok") : c.outcome;
        }
        return format_ratio_compact(c.worst_ratio);
    case Qt::BackgroundRole:
        return cell_color(c);
    case Qt::ForegroundRole:
        return text_color_on(cell_color(c));
    case Qt::TextAlignmentRole:
        return QVariant(Qt::AlignCenter);
    case Qt::ToolTipRole: {
        if (c.state == CellState::NotRun) {
            return tr("rank %1, trial %2: not run").arg(index.row()).arg(index.column());
        }
        QString tip = tr("rank %1, trial %2: <b>%3</b>")
                          .arg(index.row())
                          .arg(index.column())
                          .arg(c.state == CellState::Pass ? tr("pass")
                               : c.tie_explained          ? tr("fail (tie-explained)")
                                                          : tr("fail"));
        if (c.tensor_count > 0) {
            tip += tr("<br>worst ratio %1<br>mismatches %2 of %3<br>max |diff| %4")
                       .arg(format_ratio(c.worst_ratio))
                       .arg(c.mismatch_count)
                       .arg(c.numel)
                       .arg(format_ratio(c.max_abs_error));
        }
        if (!c.outcome.isEmpty()) {
            tip += tr("<br>outcome: %1").arg(c.outcome);
        }
        if (!c.tie_text.isEmpty()) {
            tip += QStringLiteral("<br>") + c.tie_text.toHtmlEscaped();
        }
        if (!c.message.isEmpty()) {
            tip += QStringLiteral("<br>") + c.message.toHtmlEscaped();
        }
        return tip;
    }
    }
    return {};
}

QVariant CorrectnessModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole) {
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    return orientation == Qt::Horizontal ? tr("trial %1").arg(section) : tr("rank %1").arg(section);
}

} // namespace pkbw::app
