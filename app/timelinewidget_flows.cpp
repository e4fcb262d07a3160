// TimelineWidget's flows: a CUDA runtime call and the kernel it launched (one correlation id on a
// rank), said in the selection line with the launch latency, drawn as an arrow over the lanes with the
// other one outlined, and followed by J or the line's link.
#include "timelinewidget.h"

#include <QLineF>
#include <QPainter>
#include <QPolygonF>
#include <algorithm>

namespace pkbw::app {

QString TimelineWidget::flow_text() const {
    // The launch and its kernel, tied by their correlation id: which one, where, and the launch
    // latency between the call's start and the kernel's.
    QStringList parts;
    const TimelineEvent& e = trace_->lanes[selected_lane_].events[selected_event_];
    for (const auto& [lane, event] : partners_) {
        const TimelineEvent& other = trace_->lanes[lane].events[event];
        const QString name = QString::fromStdString(trace_->names[other.name]).toHtmlEscaped();
        const QString where = QString::fromStdString(trace_->lanes[lane].name);
        parts << (other.start_us <= e.start_us
                      ? tr("launched by %1 (%2), %3 before it starts")
                            .arg(name, where, format_us(e.start_us - other.start_us))
                      : tr("launches %1 (%2), which starts %3 later")
                            .arg(name, where, format_us(other.start_us - e.start_us)));
    }
    return parts.isEmpty() ? QString()
                           : QStringLiteral(" · ") + parts.join(QStringLiteral("; ")) +
                                 tr(" · <a href=\"flow\">go to it</a> (J)");
}

bool TimelineWidget::follow_flow() {
    if (!trace_ || partners_.empty()) {
        return false;
    }
    const auto [lane, event] = partners_.front();
    const TimelineEvent& e = trace_->lanes[lane].events[event];
    const double span = t1_ - t0_;
    if (e.duration_us > span) {
        set_window(e.start_us - e.duration_us * 0.25, e.start_us + e.duration_us * 1.25);
    } else if (e.start_us < t0_ || e.start_us + e.duration_us > t1_) {
        const double middle = e.start_us + e.duration_us / 2;
        set_window(middle - span / 2, middle + span / 2);
    }
    select_event(lane, event); // its partners are now the event we came from
    return true;
}

void TimelineWidget::draw_flows(QPainter& p) const {
    // An arrow from the launch to what it launched (Perfetto's flow events), over the lanes.
    if (selected_lane_ >= trace_->lanes.size() || partners_.empty()) {
        return;
    }
    auto anchor = [this](std::size_t lane, std::size_t event) {
        const TimelineEvent& e = trace_->lanes[lane].events[event];
        return QPointF(x_of(e.start_us), lane_top(lane) + e.depth * kLaneHeight + kLaneHeight / 2.0);
    };
    const QPointF self = anchor(selected_lane_, selected_event_);
    p.setPen(QPen(palette().color(QPalette::Highlight), 1.5));
    p.setBrush(palette().color(QPalette::Highlight));
    for (const auto& [lane, event] : partners_) {
        // The other one outlined, at least a few pixels wide: a launch is often sub-pixel.
        const TimelineEvent& e = trace_->lanes[lane].events[event];
        const double x0 = x_of(e.start_us), x1 = std::max(x0 + 4, x_of(e.start_us + e.duration_us));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRectF(x0 - 1, lane_top(lane) + e.depth * kLaneHeight + 1, x1 - x0 + 2, kLaneHeight - 2));
        p.setBrush(palette().color(QPalette::Highlight));
        const QPointF other = anchor(lane, event);
        const bool launch_first = other.x() <= self.x();
        const QPointF from = launch_first ? other : self, to = launch_first ? self : other;
        p.drawLine(from, to);
        const QLineF line(to, from);
        const QLineF wing1 = QLineF::fromPolar(8, line.angle() + 25).translated(to);
        const QLineF wing2 = QLineF::fromPolar(8, line.angle() - 25).translated(to);
        p.drawPolygon(QPolygonF({to, wing1.p2(), wing2.p2()}));
    }
    p.setBrush(Qt::NoBrush);
}

} // namespace pkbw::app
