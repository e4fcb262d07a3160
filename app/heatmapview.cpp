#include "heatmapview.h"

#include "qtconvert.h"

#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

namespace pkbw::app {
namespace {

constexpr double kRatioFloor = 1e-4, kRatioCeil = 1e2;

QCPColorGradient ratio_gradient() {
    // Log scale from 1e-4 to 1e2: the tolerance (ratio 1) sits at 2/3 of the range, where the
    // gradient turns from blue-green (passing) to orange-red (failing).
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(0x1e, 0x3a, 0x8a));
    g.setColorStopAt(0.45, QColor(0x2a, 0x9d, 0x8f));
    g.setColorStopAt(0.66, QColor(0xe9, 0xe4, 0x5a));
    g.setColorStopAt(0.68, QColor(0xf4, 0xa2, 0x61));
    g.setColorStopAt(1.0, QColor(0xb0, 0x10, 0x10));
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(QColor(0xff, 0x00, 0xff));
    return g;
}

QCPColorGradient value_gradient() {
    QCPColorGradient g(QCPColorGradient::gpPolar);
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(QColor(0xff, 0x00, 0xff));
    return g;
}

} // namespace

HeatmapSet compute_heatmaps(const Tensor& ref, const Tensor& cand, double atol, double rtol, int max_side) {
    HeatmapSet s;
    s.has_values = true;
    s.atol = atol;
    s.rtol = rtol;
    s.error = analyse_error(ref, cand, atol, rtol, max_side, &s.ref, &s.cand);
    return s;
}

HeatmapSet heatmaps_from_row(const TensorResultRow& row, double atol, double rtol) {
    HeatmapSet s;
    s.title = row.name;
    s.atol = atol;
    s.rtol = rtol;
    s.error.numel = row.numel;
    s.error.mismatch_count = row.mismatch_count;
    s.error.first_mismatch = row.first_mismatch;
    s.error.worst_mismatch = row.worst_mismatch;
    s.error.worst_ratio = row.worst_ratio;
    PooledMap& m = s.error.ratio;
    m.source_rows = row.error_map.source_rows;
    m.source_cols = row.error_map.source_cols;
    m.rows = row.error_map.rows;
    m.cols = row.error_map.cols;
    m.values = row.error_map.ratio;
    for (float& v : m.values) {
        if (std::isinf(v)) {
            v = std::numeric_limits<float>::quiet_NaN();
        }
    }
    return s;
}

HeatmapView::HeatmapView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    summary_ = new QLabel(this);
    summary_->setObjectName(QStringLiteral("heatmapSummary"));
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    summary_->setWordWrap(true);
    layout->addWidget(summary_);
    auto* row = new QHBoxLayout;
    const QString titles[3] = {tr("Reference"), tr("Candidate"), tr("Error ratio")};
    for (int i = 0; i < 3; ++i) {
        plots_[i] = make_map_plot(titles[i], &maps_[i], &first_marks_[i], &worst_marks_[i]);
        row->addWidget(plots_[i], 1);
    }
    maps_[2]->setGradient(ratio_gradient());
    maps_[2]->setDataScaleType(QCPAxis::stLogarithmic);
    maps_[2]->setDataRange(QCPRange(kRatioFloor, kRatioCeil));
    maps_[2]->colorScale()->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    layout->addLayout(row, 3);

    histogram_ = new QCustomPlot(this);
    histogram_->setObjectName(QStringLiteral("errorHistogram"));
    histogram_->plotLayout()->insertRow(0);
    histogram_->plotLayout()->addElement(
        0, 0, new QCPTextElement(histogram_, tr("Error ratio histogram (elements)")));
    bars_ = new QCPBars(histogram_->xAxis, histogram_->yAxis);
    bars_->setWidth((kHistogramLog10Max - kHistogramLog10Min) / kHistogramBins);
    bars_->setPen(Qt::NoPen);
    bars_->setBrush(QColor(0x45, 0x7b, 0x9d));
    histogram_->xAxis->setLabel(tr("log10 ratio (> 0 fails)"));
    histogram_->xAxis->setRange(kHistogramLog10Min, kHistogramLog10Max);
    histogram_->yAxis->setLabel(tr("count"));
    auto* line = new QCPItemStraightLine(histogram_);
    line->point1->setCoords(0, 0);
    line->point2->setCoords(0, 1);
    line->setPen(QPen(QColor(0xc0, 0x30, 0x30), 1, Qt::DashLine));
    histogram_->setMinimumHeight(140);
    layout->addWidget(histogram_, 1);
    clear(tr("Select a rank and trial in the grid, then an output."));
}

QCustomPlot* HeatmapView::make_map_plot(const QString& title, QCPColorMap** map, QCPGraph** first,
                                        QCPGraph** worst) {
    auto* plot = new QCustomPlot(this);
    plot->setMinimumSize(200, 200);
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title));
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot->yAxis->setRangeReversed(true); // row 0 at the top, as a matrix is printed
    plot->xAxis->setLabel(tr("column"));
    plot->yAxis->setLabel(tr("row"));
    *map = new QCPColorMap(plot->xAxis, plot->yAxis);
    (*map)->setInterpolate(false);
    auto* scale = new QCPColorScale(plot);
    plot->plotLayout()->addElement(1, 1, scale);
    (*map)->setColorScale(scale);
    // After setColorScale, which hands the scale's default gradient (gpCold, no NaN colour) to the map.
    (*map)->setGradient(value_gradient());
    auto* group = new QCPMarginGroup(plot);
    plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    // Each mark is drawn over a wider halo of the opposite colour, sharing its data, so that it
    // stays visible on any cell colour (the value maps run through black and white).
    auto add_mark = [plot](QCPScatterStyle::ScatterShape shape, const QColor& color, double size) {
        QCPGraph* halo = plot->addGraph();
        halo->setLineStyle(QCPGraph::lsNone);
        const QColor contrast = color == QColor(Qt::black) ? QColor(Qt::white) : QColor(Qt::black);
        halo->setScatterStyle(QCPScatterStyle(shape, QPen(contrast, 4), Qt::NoBrush, size));
        QCPGraph* mark = plot->addGraph();
        mark->setLineStyle(QCPGraph::lsNone);
        mark->setScatterStyle(QCPScatterStyle(shape, QPen(color, 2), Qt::NoBrush, size));
        mark->setData(halo->data());
        return mark;
    };
    *first = add_mark(QCPScatterStyle::ssCircle, Qt::black, 12);
    (*first)->setName(tr("first mismatch"));
    *worst = add_mark(QCPScatterStyle::ssCrossCircle, Qt::white, 14);
    (*worst)->setName(tr("worst mismatch"));
    return plot;
}

QList<QCustomPlot*> HeatmapView::plots() const {
    return {plots_[0], plots_[1], plots_[2], histogram_};
}

void HeatmapView::fill(QCustomPlot* plot, QCPColorMap* map, const PooledMap& pooled, bool ratio) {
    auto* data = map->data();
    if (pooled.rows == 0 || pooled.cols == 0) {
        data->clear();
        map->setVisible(false);
        plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    map->setVisible(true);
    data->setSize(pooled.cols, pooled.rows);
    // Cell centres span the source extent, so axes read in source rows and columns.
    const double cw = static_cast<double>(pooled.source_cols) / pooled.cols;
    const double rh = static_cast<double>(pooled.source_rows) / pooled.rows;
    data->setRange(QCPRange(cw / 2, pooled.source_cols - cw / 2),
                   QCPRange(rh / 2, pooled.source_rows - rh / 2));
    float maxabs = 0;
    for (int r = 0; r < pooled.rows; ++r) {
        for (int c = 0; c < pooled.cols; ++c) {
            float v = pooled.at(r, c);
            if (ratio && !std::isnan(v)) {
                v = std::clamp(v, static_cast<float>(kRatioFloor), static_cast<float>(kRatioCeil));
            } else if (!std::isnan(v)) {
                maxabs = std::max(maxabs, std::fabs(v));
            }
            data->setCell(c, r, v);
        }
    }
    if (!ratio) {
        map->setDataRange(QCPRange(-std::max(maxabs, 1e-30f), std::max(maxabs, 1e-30f)));
    }
    plot->xAxis->setRange(0, static_cast<double>(pooled.source_cols));
    plot->yAxis->setRange(0, static_cast<double>(pooled.source_rows));
    plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::place_marks(QCPGraph* first, QCPGraph* worst, const PooledMap& pooled) {
    auto place = [&](QCPGraph* g, std::int64_t index) {
        g->data()->clear();
        if (index >= 0 && pooled.source_cols > 0) {
            const CellPos p = locate(pooled, index);
            g->addData(static_cast<double>(p.col) + 0.5, static_cast<double>(p.row) + 0.5);
        }
    };
    place(first, set_.error.first_mismatch);
    place(worst, set_.error.worst_mismatch);
}

void HeatmapView::show_set(const HeatmapSet& set) {
    set_ = set;
    const ErrorAnalysis& e = set_.error;
    fill(plots_[0], maps_[0], set_.ref, false);
    fill(plots_[1], maps_[1], set_.cand, false);
    fill(plots_[2], maps_[2], e.ratio, true);
    for (int i = 0; i < 3; ++i) {
        place_marks(first_marks_[i], worst_marks_[i], e.ratio);
    }
    QVector<double> keys, counts;
    for (int b = 0; b < kHistogramBins; ++b) {
        keys << kHistogramLog10Min + (b + 0.5) * (kHistogramLog10Max - kHistogramLog10Min) / kHistogramBins;
        counts << static_cast<double>(e.histogram[static_cast<std::size_t>(b)]);
    }
    bars_->setData(keys, counts, true);
    histogram_->yAxis->rescale();
    histogram_->replot(QCustomPlot::rpQueuedReplot);
    summary_->setText(summary_text());
}

QString HeatmapView::summary_text() const {
    const ErrorAnalysis& e = set_.error;
    if (e.ratio.source_cols == 0 && e.numel == 0) {
        return {};
    }
    auto where = [&](std::int64_t index) {
        const CellPos p = locate(e.ratio, index);
        return QStringLiteral("[%1, %2]").arg(p.row).arg(p.col);
    };
    QString text = tr("<b>%1</b> at atol %2, rtol %3: ")
                       .arg(to_qstring(set_.title).toHtmlEscaped())
                       .arg(set_.atol)
                       .arg(set_.rtol);
    const double pct =
        e.numel > 0 ? 100.0 * static_cast<double>(e.mismatch_count) / static_cast<double>(e.numel) : 0;
    text += tr("%1 of %2 elements mismatch (%3%), worst ratio %4")
                .arg(e.mismatch_count)
                .arg(e.numel)
                .arg(QString::number(pct, 'g', 3))
                .arg(format_ratio(e.worst_ratio));
    if (e.worst_mismatch >= 0) {
        text += tr(", worst at %1, first at %2").arg(where(e.worst_mismatch), where(e.first_mismatch));
    }
    if (e.ratio.masked_elements > 0 || set_.ref.masked_elements > 0 || set_.cand.masked_elements > 0) {
        text += tr("; NaN/Inf masked (magenta): ratio %1, reference %2, candidate %3")
                    .arg(e.ratio.masked_elements)
                    .arg(set_.ref.masked_elements)
                    .arg(set_.cand.masked_elements);
    }
    if (e.ratio.rows > 0 && (e.ratio.rows < e.ratio.source_rows || e.ratio.cols < e.ratio.source_cols)) {
        text += tr("; %1×%2 shown as %3×%4 (max-pooled)")
                    .arg(e.ratio.source_rows)
                    .arg(e.ratio.source_cols)
                    .arg(e.ratio.rows)
                    .arg(e.ratio.cols);
    }
    if (!set_.has_values) {
        text += tr("; outputs files not found: stored error map only");
    }
    return text;
}

void HeatmapView::clear(const QString& message) {
    set_ = {};
    for (int i = 0; i < 3; ++i) {
        maps_[i]->data()->clear();
        maps_[i]->setVisible(false);
        first_marks_[i]->data()->clear();
        worst_marks_[i]->data()->clear();
        plots_[i]->replot(QCustomPlot::rpQueuedReplot);
    }
    bars_->data()->clear();
    histogram_->replot(QCustomPlot::rpQueuedReplot);
    summary_->setText(message);
}

} // namespace pkbw::app
