#include "heatmapview.h"

#include "fittingticker.h"
#include "qtconvert.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QShortcut>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
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

QCPColorGradient value_gradient(bool diverging) {
    // Diverging data (both signs) on the polar scale, centred on 0; one-signed data on a sequential
    // scale over its own [min, max], so that no half of the palette is wasted.
    QCPColorGradient g(QCPColorGradient::gpPolar);
    if (!diverging) {
        // A viridis-like ramp, dark to light yellow: neither end is the plot's white background.
        g.clearColorStops();
        g.setColorStopAt(0.0, QColor(0x44, 0x01, 0x54));
        g.setColorStopAt(0.25, QColor(0x3b, 0x52, 0x8b));
        g.setColorStopAt(0.5, QColor(0x21, 0x91, 0x8c));
        g.setColorStopAt(0.75, QColor(0x5e, 0xc9, 0x62));
        g.setColorStopAt(1.0, QColor(0xfd, 0xe7, 0x25));
    }
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(QColor(0xff, 0x00, 0xff));
    return g;
}

} // namespace

HeatmapView::HeatmapView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    summary_ = new QLabel(this);
    summary_->setObjectName(QStringLiteral("heatmapSummary"));
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    summary_->setWordWrap(true);
    layout->addWidget(summary_);
    readout_ = new QLabel(tr("Hover a map for the element under the cursor; the wheel zooms, a drag pans, a "
                             "double click or Home shows the whole tensor again."),
                          this);
    readout_->setObjectName(QStringLiteral("heatmapReadout"));
    readout_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    readout_->setWordWrap(true); // beside the Colours box, a narrow view wraps it rather than widening
    auto* readout_row = new QHBoxLayout;
    readout_row->addWidget(readout_, 1);
    readout_row->addWidget(new QLabel(tr("Colours:"), this));
    scale_ = new QComboBox(this);
    scale_->setObjectName(QStringLiteral("heatmapScale"));
    scale_->addItems({tr("auto"), tr("full range"), tr("robust (1st–99th percentile)"), tr("symlog")});
    scale_->setToolTip(tr("Value and difference colours: the full range of the cells, or their 1st–99th "
                          "percentile with the tails saturating (auto takes it for heavy tails), or symlog: "
                          "linear near 0, logarithmic beyond, every value in range"));
    connect(scale_, &QComboBox::currentIndexChanged, this, [this] {
        apply_value_scales();
        for (int i = 0; i < 3; ++i) {
            plots_[i]->replot(QCustomPlot::rpQueuedReplot);
        }
        summary_->setText(summary_text());
    });
    readout_row->addWidget(scale_);
    layout->addLayout(readout_row);
    repool_timer_ = new QTimer(this);
    repool_timer_->setSingleShot(true);
    repool_timer_->setInterval(120);
    connect(repool_timer_, &QTimer::timeout, this, &HeatmapView::repool);
    auto* home = new QShortcut(QKeySequence(Qt::Key_Home), this, this, &HeatmapView::reset_view);
    home->setContext(Qt::WidgetWithChildrenShortcut);
    auto* grid = new QGridLayout;
    const QString titles[kMaps] = {tr("Reference"), tr("Candidate"), tr("Difference (candidate − reference)"),
                                   tr("Error ratio")};
    for (int i = 0; i < kMaps; ++i) {
        plots_[i] = make_map_plot(titles[i], &maps_[i], &first_marks_[i], &worst_marks_[i]);
        grid->addWidget(plots_[i], i / 2, i % 2);
        QCustomPlot* plot = plots_[i];
        // A range change that is not the fit (fit_aspect blocks these signals) is a zoom or pan: the
        // view is the user's from then on, kept across resizes until reset.
        connect(plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this, plot] {
            zoomed_ = zoomed_ || !filling_;
            link_ranges(plot);
            schedule_repool();
        });
        connect(plot->yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this, plot] {
            zoomed_ = zoomed_ || !filling_;
            link_ranges(plot);
            schedule_repool();
        });
        connect(plot, &QCustomPlot::mouseMove, this, [this, plot](QMouseEvent* e) { hover(plot, e); });
        connect(plot, &QCustomPlot::mouseDoubleClick, this, [this] { reset_view(); });
        connect(plot, &QCustomPlot::afterLayout, this, [this, i, plot] {
            if (fit_pending_[i] || (!zoomed_ && maps_[i]->visible())) {
                // Not zoomed: the whole tensor stays in view at any size (the smaller scale wins),
                // so that a short, wide window crops no rows.
                fit_pending_[i] = true;
                fit_aspect(plot);
            } else if (maps_[i]->visible()) {
                // Keep square cells when the widget is resized: y follows x's scale.
                const QSignalBlocker block(plot->yAxis);
                plot->yAxis->setScaleRatio(plot->xAxis, 1.0);
            }
        });
    }
    maps_[3]->setGradient(ratio_gradient());
    maps_[3]->setDataScaleType(QCPAxis::stLogarithmic);
    maps_[3]->setDataRange(QCPRange(kRatioFloor, kRatioCeil));
    maps_[3]->colorScale()->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    maps_[2]->setGradient(value_gradient(true));
    layout->addLayout(grid, 4);

    histogram_ = new QCustomPlot(this);
    histogram_->setObjectName(QStringLiteral("errorHistogram"));
    histogram_->plotLayout()->insertRow(0);
    histogram_title_ = new QCPTextElement(histogram_, tr("Error ratio histogram (elements)"));
    histogram_->plotLayout()->addElement(0, 0, histogram_title_);
    bars_ = new QCPBars(histogram_->xAxis, histogram_->yAxis);
    bars_->setWidth((kHistogramLog10Max - kHistogramLog10Min) / kHistogramBins);
    bars_->setPen(Qt::NoPen);
    bars_->setBrush(QColor(0x45, 0x7b, 0x9d));
    histogram_->xAxis->setLabel(tr("log10 ratio (> 0 fails)"));
    histogram_->xAxis->setRange(kHistogramLog10Min, kHistogramLog10Max);
    histogram_->yAxis->setLabel(tr("count"));
    use_fitting_ticks(histogram_, true); // log10 decades and counts
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
    plot->setMinimumSize(160, 140);
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title));
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot->setMouseTracking(true);        // the hover readout follows the cursor without a button held
    plot->yAxis->setRangeReversed(true); // row 0 at the top, as a matrix is printed
    plot->xAxis->setLabel(tr("column"));
    plot->yAxis->setLabel(tr("row"));
    use_fitting_ticks(plot, true); // whole rows and columns, as many labels as fit (review defect 26)
    *map = new QCPColorMap(plot->xAxis, plot->yAxis);
    (*map)->setInterpolate(false);
    auto* scale = new QCPColorScale(plot);
    plot->plotLayout()->addElement(1, 1, scale);
    (*map)->setColorScale(scale);
    use_fitting_ticks(scale->axis(), false); // the ratio's log ticker replaces it
    // After setColorScale, which hands the scale's default gradient (gpCold, no NaN colour) to the map.
    (*map)->setGradient(value_gradient(false));
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
    return {plots_[0], plots_[1], plots_[2], plots_[3], histogram_};
}

void HeatmapView::fit_aspect(QCustomPlot* plot) {
    // The whole source extent with square cells: the axis that fits decides the scale, the other
    // is widened about its centre.
    const QRect r = plot->axisRect()->rect();
    const int i = static_cast<int>(std::find(plots_, plots_ + kMaps, plot) - plots_);
    const PooledMap* m = i == 3   ? &set_.error.ratio
                         : i == 2 ? &set_.error.diff
                         : i == 1 ? &set_.cand
                                  : &set_.ref;
    if (r.width() < 8 || r.height() < 8 || m->source_cols <= 0) {
        return;
    }
    fit_pending_[i] = false;
    const double cols = static_cast<double>(m->source_cols), rows = static_cast<double>(m->source_rows);
    const double per_px = std::max(cols / r.width(), rows / r.height());
    // Square cells, except that no map is drawn flatter or narrower than kMinExtentPx: square cells
    // made a [1, 1024] output a line under a pixel high.
    constexpr double kMinExtentPx = 48;
    const double per_px_x =
        cols / per_px < kMinExtentPx ? cols / std::min<double>(kMinExtentPx, r.width()) : per_px;
    const double per_px_y =
        rows / per_px < kMinExtentPx ? rows / std::min<double>(kMinExtentPx, r.height()) : per_px;
    const QSignalBlocker bx(plot->xAxis), by(plot->yAxis);
    plot->xAxis->setRange(cols / 2, per_px_x * r.width(), Qt::AlignCenter);
    plot->yAxis->setRange(rows / 2, per_px_y * r.height(), Qt::AlignCenter);
}

void HeatmapView::reset_view() {
    zoomed_ = false;
    repool_timer_->stop();
    if (region_shown_) {
        show_whole_maps();
    }
    for (int i = 0; i < kMaps; ++i) {
        if (maps_[i]->visible()) {
            fit_pending_[i] = true;
            fit_aspect(plots_[i]);
            plots_[i]->replot(QCustomPlot::rpQueuedReplot);
        }
    }
}

void HeatmapView::link_ranges(QCustomPlot* from) {
    // Every map shows the same region: a zoom or pan in one is applied to the others.
    if (linking_) {
        return;
    }
    linking_ = true;
    for (QCustomPlot* plot : plots_) {
        if (plot != from) {
            plot->xAxis->setRange(from->xAxis->range());
            plot->yAxis->setRange(from->yAxis->range());
            plot->replot(QCustomPlot::rpQueuedReplot);
        }
    }
    linking_ = false;
}

void HeatmapView::hover(QCustomPlot* plot, QMouseEvent* event) {
    const double x = plot->xAxis->pixelToCoord(event->position().x());
    const double y = plot->yAxis->pixelToCoord(event->position().y());
    const PooledMap& m = set_.error.ratio;
    if (x < 0 || y < 0 || x >= static_cast<double>(m.source_cols) ||
        y >= static_cast<double>(m.source_rows)) {
        return;
    }
    readout_->setText(readout_at(static_cast<std::int64_t>(y), static_cast<std::int64_t>(x)));
}

QString HeatmapView::readout_text() const {
    return readout_->text();
}

QPair<double, double> HeatmapView::value_range() const {
    const QCPRange r = maps_[0]->dataRange();
    return {r.lower, r.upper};
}

bool HeatmapView::ratio_shown() const {
    return !plots_[3]->isHidden() && !histogram_->isHidden();
}

bool HeatmapView::values_shown() const {
    return !plots_[0]->isHidden() && maps_[0]->visible();
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
    put_cells(map, pooled, ratio, 0, 0);
    {
        const QSignalBlocker bx(plot->xAxis), by(plot->yAxis);
        plot->xAxis->setRange(0, static_cast<double>(pooled.source_cols));
        plot->yAxis->setRange(0, static_cast<double>(pooled.source_rows));
    }
    // Ticks name the tensor's rows and columns only, not the margins the square cells add.
    set_tick_extent(plot->xAxis, 0, static_cast<double>(pooled.source_cols));
    set_tick_extent(plot->yAxis, 0, static_cast<double>(pooled.source_rows));
    const int i = static_cast<int>(std::find(plots_, plots_ + kMaps, plot) - plots_);
    fit_pending_[i] = true; // square cells once the axis rect has its size (afterLayout)
    fit_aspect(plot);
    plot->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::set_value_gradient(QCPColorMap* map, bool diverging) {
    map->setGradient(value_gradient(diverging));
}

void HeatmapView::put_cells(QCPColorMap* map, const PooledMap& pooled, bool ratio, double col0, double row0) {
    auto* data = map->data();
    const auto which = std::find(maps_, maps_ + 3, map) - maps_;
    const double symlog_c = which < 3 ? symlog_c_[which] : 0;
    // QCPColorMap sizes a cell from the spacing of two: a map of one row (a [1, N] output, a vector)
    // or one column is drawn with no height or width at all. Such a map is drawn as two identical rows
    // (columns) that span the one's extent.
    const int draw_cols = pooled.cols == 1 ? 2 : pooled.cols;
    const int draw_rows = pooled.rows == 1 ? 2 : pooled.rows;
    data->setSize(draw_cols, draw_rows);
    // Cell centres span the source extent (from col0, row0 for a region), so axes read in source rows
    // and columns.
    const double cw = static_cast<double>(pooled.source_cols) / draw_cols;
    const double rh = static_cast<double>(pooled.source_rows) / draw_rows;
    data->setRange(QCPRange(col0 + cw / 2, col0 + pooled.source_cols - cw / 2),
                   QCPRange(row0 + rh / 2, row0 + pooled.source_rows - rh / 2));
    for (int r = 0; r < draw_rows; ++r) {
        for (int c = 0; c < draw_cols; ++c) {
            float v = pooled.at(std::min(r, pooled.rows - 1), std::min(c, pooled.cols - 1));
            if (ratio && !std::isnan(v)) {
                v = std::clamp(v, static_cast<float>(kRatioFloor), static_cast<float>(kRatioCeil));
            } else if (symlog_c > 0 && std::isfinite(v)) {
                v = static_cast<float>(symlog(v, symlog_c));
            }
            data->setCell(c, r, v);
        }
    }
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

void HeatmapView::place_tie_bands() {
    // Translucent violet bands with an outline: the cells stay readable beneath them. Bands are merged
    // runs of consecutive tie rows, capped so that a tensor with thousands of ties stays responsive.
    constexpr std::size_t kMaxBands = 512;
    for (int i = 0; i < kMaps; ++i) {
        for (QCPAbstractItem* item : band_items_[i]) {
            plots_[i]->removeItem(item);
        }
        band_items_[i].clear();
    }
    bands_.clear();
    bands_truncated_ = false;
    if (!set_.ties) {
        return;
    }
    bands_ = tie_bands(set_.ties->named, set_.shape, kMaxBands, &bands_truncated_);
    QColor fill = tie_explained_color();
    fill.setAlpha(60);
    for (int i = 0; i < kMaps; ++i) {
        for (const TieBand& b : bands_) {
            auto* rect = new QCPItemRect(plots_[i]);
            rect->topLeft->setCoords(b.col0, b.row0);
            rect->bottomRight->setCoords(b.col1, b.row1);
            rect->setPen(QPen(tie_explained_color(), 1.5));
            rect->setBrush(fill);
            rect->setSelectable(false);
            band_items_[i].push_back(rect);
        }
        plots_[i]->replot(QCustomPlot::rpQueuedReplot);
    }
}

void HeatmapView::show_set(const HeatmapSet& set) {
    set_ = set;
    zoomed_ = false; // a new set opens whole
    repool_timer_->stop();
    ++repool_request_;
    region_shown_ = false;
    filling_ = true; // its own ranges are no zoom
    struct Filled {
        bool& flag;
        ~Filled() { flag = false; }
    } filled{filling_};
    const ErrorAnalysis& e = set_.error;
    // Value maps only where there are values (the outputs files); the stored error map alone gives
    // the ratio, and empty value maps with made-up axes would suggest otherwise.
    const bool values = set_.has_values;
    for (int i = 0; i < 3; ++i) {
        plots_[i]->setVisible(values);
    }
    plots_[3]->setVisible(true);
    fill(plots_[3], maps_[3], e.ratio, true);
    if (values) {
        fill(plots_[0], maps_[0], set_.ref, false);
        fill(plots_[1], maps_[1], set_.cand, false);
        fill(plots_[2], maps_[2], e.diff, false);
    }
    apply_value_scales(); // heatmapview_scale.cpp
    for (int i = 0; i < kMaps; ++i) {
        place_marks(first_marks_[i], worst_marks_[i], e.ratio);
    }
    place_tie_bands();
    readout_->setText(tr("Hover a map for the element under the cursor."));
    QVector<double> keys, counts;
    for (int b = 0; b < kHistogramBins; ++b) {
        keys << kHistogramLog10Min + (b + 0.5) * (kHistogramLog10Max - kHistogramLog10Min) / kHistogramBins;
        counts << static_cast<double>(e.histogram[static_cast<std::size_t>(b)]);
    }
    bars_->setData(keys, counts, true);
    const double top = counts.isEmpty() ? 0 : *std::max_element(counts.begin(), counts.end());
    histogram_->yAxis->setRange(0, std::max(1.0, top * 1.05)); // counts are never negative
    // Elements outside the bins are counted apart, and said so: a NaN-only cell otherwise shows
    // an empty plot.
    // The histogram counts elements, which only the outputs files hold: from the stored error map alone
    // it would read "0 exact and 0 non-finite" beside a summary of a million exact elements. Its title
    // then says why it is empty.
    histogram_->setVisible(true);
    if (!values) {
        bars_->data()->clear();
    }
    histogram_title_->setText(
        values
            ? tr("Error ratio histogram (elements): %1 exact (ratio 0) and %2 non-finite "
                 "(NaN/Inf, ratio +inf) not binned")
                  .arg(e.exact_count)
                  .arg(e.nonfinite_mismatches)
            : tr("No error histogram: this run kept its error map, not its outputs (pkbw eval --keep-outputs "
                 "keeps them)"));
    histogram_->replot(QCustomPlot::rpQueuedReplot);
    summary_->setText(summary_text());
}

void HeatmapView::clear(const QString& message) {
    // Nothing of the run shown before survives: data, axes, colour ranges and marks are reset, and
    // the value maps are hidden until a set with values arrives.
    set_ = {};
    zoomed_ = false;
    for (int i = 0; i < kMaps; ++i) {
        maps_[i]->data()->clear();
        maps_[i]->setVisible(false);
        first_marks_[i]->data()->clear();
        worst_marks_[i]->data()->clear();
        fit_pending_[i] = false;
        {
            const QSignalBlocker bx(plots_[i]->xAxis), by(plots_[i]->yAxis);
            plots_[i]->xAxis->setRange(0, 1);
            plots_[i]->yAxis->setRange(0, 1);
        }
        set_tick_extent(plots_[i]->xAxis, 0, 0);
        set_tick_extent(plots_[i]->yAxis, 0, 0);
        if (i < 3) {
            maps_[i]->setDataRange(QCPRange(0, 1));
        }
        // Every map hidden, the ratio's too: made-up 0-1 axes would suggest a map with no data.
        plots_[i]->setVisible(false);
        plots_[i]->replot(QCustomPlot::rpQueuedReplot);
    }
    place_tie_bands(); // set_ has no ties now: removes the bands
    bars_->data()->clear();
    histogram_->yAxis->setRange(0, 1);
    histogram_title_->setText(tr("Error ratio histogram (elements)"));
    histogram_->replot(QCustomPlot::rpQueuedReplot);
    histogram_->setVisible(false);
    readout_->setText(QString());
    summary_->setText(message);
}

} // namespace pkbw::app
