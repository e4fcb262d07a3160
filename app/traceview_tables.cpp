// The Trace tab's two tables: the summary (kernels, copies and NVTX ranges by side and rank) and the
// comm/compute overlap per side and rank, built once and refilled from each TraceSummary.
#include "qtconvert.h"
#include "traceview.h"

#include <QHeaderView>
#include <QSplitter>
#include <QTableWidget>
#include <algorithm>

namespace pkbw::app {
namespace {

QTableWidgetItem* number_item(double v, int decimals) {
    auto* item = new QTableWidgetItem;
    item->setData(Qt::DisplayRole, QString::number(v, 'f', decimals));
    item->setData(Qt::UserRole, v);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

// The GPU's busy share of the iterations, each iteration's share in the tooltip.
QTableWidgetItem* busy_item(const SideOverlap& o) {
    QTableWidgetItem* item = number_item(o.busy_percent, 1);
    QStringList each;
    for (double p : o.busy_percent_by_iteration) {
        each << QString::number(p, 'f', 1);
    }
    item->setToolTip(
        QObject::tr("GPU busy per iteration, in time order (%): %1").arg(each.join(QStringLiteral(", "))));
    return item;
}

// Sorting on the numbers, not their text.
class NumberItem : public QTableWidgetItem {
public:
    using QTableWidgetItem::QTableWidgetItem;
    bool operator<(const QTableWidgetItem& other) const override {
        const QVariant a = data(Qt::UserRole), b = other.data(Qt::UserRole);
        if (a.isValid() && b.isValid()) {
            return a.toDouble() < b.toDouble();
        }
        return QTableWidgetItem::operator<(other);
    }
};

// A kernel's name without its return type and parameter list ("void ns::k<float>(float*, int)" ->
// "ns::k<float>"): the identifying part, which eliding in the middle removed.
QString short_kernel_name(const QString& name) {
    QString text = name.trimmed();
    if (text.endsWith(QLatin1Char(')'))) {
        int depth = 0;
        for (int i = static_cast<int>(text.size()) - 1; i >= 0; --i) {
            depth += text[i] == QLatin1Char(')') ? 1 : text[i] == QLatin1Char('(') ? -1 : 0;
            if (depth == 0) {
                if (i > 0) {
                    text = text.left(i);
                }
                break;
            }
        }
    }
    if (text.startsWith(QStringLiteral("void "))) {
        text = text.mid(5);
    }
    return text;
}

QTableWidgetItem* sortable(double v, int decimals) {
    auto* item = new NumberItem;
    item->setData(Qt::DisplayRole, QString::number(v, 'f', decimals));
    item->setData(Qt::UserRole, v);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

QSplitter* TraceView::make_tables(QWidget* parent) {
    auto* tables = new QSplitter(Qt::Horizontal, parent);
    summary_ = new QTableWidget(0, 9, tables);
    summary_->setObjectName(QStringLiteral("traceSummary"));
    summary_->setHorizontalHeaderLabels({tr("Side"), tr("Rank"), tr("Kind"), tr("Name"), tr("Count"),
                                         tr("Total µs"), tr("Mean µs"), tr("% of iteration"), tr("Comm")});
    summary_->horizontalHeaderItem(8)->setToolTip(
        tr("Counted as communication in the overlap: NCCL, a peer copy, a kernel given a pointer into a "
           "peer's memory, a name that says so, or ticked by you (tick a kernel your candidate uses to "
           "reach other GPUs)"));
    overlap_ = new QTableWidget(0, 10, tables);
    overlap_->setObjectName(QStringLiteral("traceOverlap"));
    overlap_->setHorizontalHeaderLabels({tr("Side"), tr("Rank"), tr("Iterations"), tr("Compute µs"),
                                         tr("Comm µs"), tr("Overlap µs"), tr("Comm overlapped %"),
                                         tr("GPU idle µs"), tr("GPU busy %"), tr("Waiting for peers µs")});
    overlap_->horizontalHeaderItem(8)->setToolTip(
        tr("The share of the iterations' time some kernel, copy or memset ran; each iteration's share "
           "in the cell's tooltip"));
    for (QTableWidget* t : {summary_, overlap_}) {
        t->verticalHeader()->hide();
        t->setEditTriggers(QAbstractItemView::NoEditTriggers);
        t->setSelectionBehavior(QAbstractItemView::SelectRows);
        t->horizontalHeader()->setStretchLastSection(true);
        t->setWordWrap(false);
        t->verticalHeader()->setDefaultSectionSize(22);
    }
    // Names are the long column: shown without return type and parameters (short_kernel_name), the
    // identifying part kept; whole in the tooltip.
    summary_->setTextElideMode(Qt::ElideRight);
    for (int c : {0, 1, 2, 4, 5, 6, 7, 8}) {
        summary_->setColumnWidth(c, c == 0 ? 80 : c == 1 ? 44 : c == 2 ? 72 : 80);
    }
    summary_->setColumnWidth(3, 300);
    for (int c = 0; c < 10; ++c) {
        overlap_->setColumnWidth(c, c < 3 ? 70 : 90);
    }
    tables->addWidget(summary_);
    tables->addWidget(overlap_);
    tables->setStretchFactor(0, 3);
    tables->setStretchFactor(1, 2);
    return tables;
}

void TraceView::fill_tables(const TraceSummary& s) {
    summary_->setRowCount(static_cast<int>(s.rows.size()));
    for (int i = 0; i < static_cast<int>(s.rows.size()); ++i) {
        const TraceSummaryRow& row = s.rows[static_cast<std::size_t>(i)];
        summary_->setItem(i, 0, new QTableWidgetItem(to_qstring(row.side)));
        summary_->setItem(i, 1, sortable(row.rank, 0));
        summary_->setItem(i, 2, new QTableWidgetItem(to_qstring(row.kind)));
        auto* name = new QTableWidgetItem(short_kernel_name(to_qstring(row.name)));
        name->setToolTip(to_qstring(row.name));
        name->setData(Qt::UserRole, to_qstring(row.name));
        summary_->setItem(i, 3, name);
        summary_->setItem(i, 4, sortable(static_cast<double>(row.count), 0));
        summary_->setItem(i, 5, sortable(row.total_us, 3));
        summary_->setItem(i, 6, sortable(row.mean_us, 3));
        summary_->setItem(i, 7, sortable(row.percent_of_iteration, 1));
        auto* comm = new QTableWidgetItem(to_qstring(row.communication));
        comm->setData(Qt::UserRole, to_qstring(row.name));
        if (row.kind == "kernel") {
            comm->setFlags((comm->flags() | Qt::ItemIsUserCheckable) & ~Qt::ItemIsEditable);
            comm->setCheckState(row.communication.empty() ? Qt::Unchecked : Qt::Checked);
        }
        summary_->setItem(i, 8, comm);
    }
    summary_->setSortingEnabled(true);
    // The side and kind columns hold their longest word ("cuda runtime", "gpu annotation" of a torch
    // profile; review point 11): never narrower than the defaults the table opened with.
    for (const auto& [column, least] : {std::pair{0, 80}, std::pair{2, 72}}) {
        int widest = least;
        for (int r = 0; r < summary_->rowCount(); ++r)
            if (const QTableWidgetItem* item = summary_->item(r, column))
                widest = std::max(widest, summary_->fontMetrics().horizontalAdvance(item->text()) + 16);
        summary_->setColumnWidth(column, widest);
    }
    overlap_->setRowCount(static_cast<int>(s.overlaps.size()));
    for (int i = 0; i < static_cast<int>(s.overlaps.size()); ++i) {
        const SideOverlap& o = s.overlaps[static_cast<std::size_t>(i)];
        overlap_->setItem(i, 0, new QTableWidgetItem(to_qstring(o.side)));
        overlap_->setItem(i, 1, number_item(o.rank, 0));
        overlap_->setItem(i, 2, number_item(o.iterations, 0));
        overlap_->setItem(i, 3, number_item(o.compute_us, 3));
        overlap_->setItem(i, 4, number_item(o.communication_us, 3));
        overlap_->setItem(i, 5, number_item(o.overlap_us, 3));
        overlap_->setItem(i, 6,
                          o.communication_us > 0 ? number_item(o.overlap_percent, 1)
                                                 : new QTableWidgetItem(tr("no communication")));
        overlap_->setItem(i, 7, number_item(o.idle_us, 3));
        overlap_->setItem(i, 8, busy_item(o));
        overlap_->setItem(i, 9, number_item(o.waiting_for_peers_us, 3));
    }
}

} // namespace pkbw::app
