// TimelineWidget's painting: the ruler, a header per rank, each lane's events (sub-pixel ones merged
// into grey blocks, highlighted and selected ones outlined), the flows over them and the area selected
// by a drag.
#include "timelinewidget.h"

#include <QPainter>
#include <algorithm>
#include <vector>

namespace pkbw::app {
namespace {

QColor color_of(std::uint32_t name) {
    return QColor::fromHsv(static_cast<int>((name * 47u) % 360u), 120, 210);
}

} // namespace

void TimelineWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette& pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    drawn_ = 0;
    if (!trace_ || trace_->lanes.empty()) {
        p.setPen(pal.color(QPalette::Text));
        p.drawText(rect(), Qt::AlignCenter, tr("No trace to show (the line above says why)."));
        return;
    }
    p.setPen(pal.color(QPalette::Text));
    for (const Tick& t : ticks()) {
        p.drawLine(QPointF(t.x, kAxisHeight - 6), QPointF(t.x, kAxisHeight));
        p.drawText(QPointF(t.x + 2, kAxisHeight - 8), t.label);
    }
    int rank = -1;
    int y = kAxisHeight;
    for (std::size_t li = 0; li < trace_->lanes.size() && y < height(); ++li) {
        const TimelineLane& lane = trace_->lanes[li];
        y = lane_top(li) - (lane.rank != rank ? kRankHeader : 0);
        if (lane.rank != rank) {
            rank = lane.rank;
            p.fillRect(QRect(0, y, width(), kRankHeader), pal.color(QPalette::AlternateBase));
            p.setPen(pal.color(QPalette::Text));
            QFont bold = font();
            bold.setBold(true);
            p.setFont(bold);
            p.drawText(QRect(4, y, width(), kRankHeader), Qt::AlignVCenter, tr("rank %1").arg(rank));
            p.setFont(font());
            y += kRankHeader;
        }
        p.setPen(pal.color(QPalette::Text));
        p.drawText(QRect(12, y, kLabelWidth - 14, kLaneHeight), Qt::AlignVCenter,
                   QString::fromStdString(lane.name));
        draw_lane_events(p, li, y);
        y += kLaneHeight * lane.depths;
    }
    draw_flows(p);
    draw_area(p);
}

// One lane's visible events at `y`: each event a pixel wide or more as its own rectangle (named when
// wide enough, dimmed when a highlight picks others, outlined when selected), narrower ones merged
// into grey blocks per nesting row.
void TimelineWidget::draw_lane_events(QPainter& p, std::size_t li, int y) {
    const TimelineLane& lane = trace_->lanes[li];
    const QPalette& pal = palette();
    const QColor merged(0x70, 0x70, 0x78);
    const double xmin = kLabelWidth, xmax = width();
    const auto [first, last] = trace_->visible(lane, t0_, t1_);
    // Pending merged block of sub-pixel events, one per nesting row.
    std::vector<double> bx0(static_cast<std::size_t>(lane.depths), -1), bx1(bx0);
    auto flush_row = [&](int d) {
        double& block_x0 = bx0[static_cast<std::size_t>(d)];
        double& block_x1 = bx1[static_cast<std::size_t>(d)];
        if (block_x1 >= block_x0 && block_x0 >= 0) {
            p.fillRect(QRectF(block_x0, y + d * kLaneHeight + 2, std::max(1.0, block_x1 - block_x0),
                              kLaneHeight - 4),
                       merged);
            ++drawn_;
        }
        block_x0 = block_x1 = -1;
    };
    auto flush = [&] {
        for (int d = 0; d < lane.depths; ++d) {
            flush_row(d);
        }
    };
    p.setPen(Qt::NoPen);
    for (std::size_t i = first; i < last; ++i) {
        const TimelineEvent& e = lane.events[i];
        const double x0 = std::max(xmin, x_of(e.start_us));
        const double x1 = std::min(xmax, x_of(e.start_us + e.duration_us));
        double& block_x0 = bx0[e.depth];
        double& block_x1 = bx1[e.depth];
        if (x1 - x0 < 1.0) {
            if (block_x0 >= 0 && x0 <= block_x1 + 1.0) {
                block_x1 = std::max(block_x1, x1);
            } else {
                flush_row(e.depth);
                block_x0 = x0;
                block_x1 = x1;
            }
            continue;
        }
        flush_row(e.depth);
        const QRectF r(x0, y + e.depth * kLaneHeight + 2, x1 - x0, kLaneHeight - 4);
        QColor fill = color_of(e.name);
        if (!highlight_.isEmpty() && !highlighted(e.name)) {
            fill.setAlpha(60); // dimmed: the search or the summary row picks others
        }
        p.fillRect(r, fill);
        ++drawn_;
        if (!highlight_.isEmpty() && highlighted(e.name)) {
            p.setPen(QPen(pal.color(QPalette::Highlight), 1.5));
            p.drawRect(r);
            p.setPen(Qt::NoPen);
        }
        if (r.width() > 40) {
            p.setPen(Qt::black);
            p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter,
                       p.fontMetrics().elidedText(QString::fromStdString(trace_->names[e.name]),
                                                  Qt::ElideRight, static_cast<int>(r.width()) - 5));
            p.setPen(Qt::NoPen);
        }
        if (li == selected_lane_ && i == selected_event_) {
            p.setPen(QPen(pal.color(QPalette::Highlight), 2));
            p.drawRect(r);
            p.setPen(Qt::NoPen);
        }
    }
    flush();
}

// The area selected by a drag: shaded, its edges drawn and its length written.
void TimelineWidget::draw_area(QPainter& p) const {
    const QPalette& pal = palette();
    const double xmin = kLabelWidth, xmax = width();
    if (area_t1_ > area_t0_) {
        const double x0 = std::max(xmin, x_of(area_t0_)), x1 = std::min(xmax, x_of(area_t1_));
        if (x1 > x0) {
            QColor shade = pal.color(QPalette::Highlight);
            shade.setAlpha(50);
            p.fillRect(QRectF(x0, kAxisHeight, x1 - x0, height() - kAxisHeight), shade);
            p.setPen(pal.color(QPalette::Highlight));
            p.drawLine(QPointF(x0, kAxisHeight), QPointF(x0, height()));
            p.drawLine(QPointF(x1, kAxisHeight), QPointF(x1, height()));
            p.drawText(QPointF(x0 + 3, kAxisHeight + 12), format_us(area_t1_ - area_t0_));
        }
    }
}

} // namespace pkbw::app
