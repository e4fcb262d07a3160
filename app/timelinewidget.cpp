#include "timelinewidget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace pkbw::app {
namespace {

QColor color_of(std::uint32_t name) {
    return QColor::fromHsv(static_cast<int>((name * 47u) % 360u), 120, 210);
}

QString format_us(double us) {
    if (std::fabs(us) >= 1e6) {
        return QString::number(us / 1e6, 'g', 4) + QStringLiteral(" s");
    }
    if (std::fabs(us) >= 1e3) {
        return QString::number(us / 1e3, 'g', 4) + QStringLiteral(" ms");
    }
    return QString::number(us, 'g', 4) + QStringLiteral(" µs");
}

} // namespace

TimelineWidget::TimelineWidget(QWidget* parent)
    : QWidget(parent) {
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(false);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumHeight(120);
}

void TimelineWidget::set_trace(std::shared_ptr<const TimelineData> trace) {
    trace_ = std::move(trace);
    selected_lane_ = selected_event_ = SIZE_MAX;
    if (trace_ && trace_->end_us > trace_->begin_us) {
        set_window(trace_->begin_us, trace_->end_us);
    } else {
        update();
    }
}

void TimelineWidget::set_window(double t0, double t1) {
    if (!(t1 > t0)) {
        return;
    }
    t0_ = t0;
    t1_ = t1;
    update();
}

double TimelineWidget::x_of(double t) const {
    const double w = std::max(1, width() - kLabelWidth);
    return kLabelWidth + (t - t0_) / (t1_ - t0_) * w;
}

double TimelineWidget::t_of(double x) const {
    const double w = std::max(1, width() - kLabelWidth);
    return t0_ + (x - kLabelWidth) / w * (t1_ - t0_);
}

int TimelineWidget::lane_top(std::size_t lane) const {
    int y = kAxisHeight;
    int rank = -1;
    for (std::size_t i = 0; i <= lane && i < trace_->lanes.size(); ++i) {
        if (trace_->lanes[i].rank != rank) {
            rank = trace_->lanes[i].rank;
            y += kRankHeader;
        }
        if (i < lane) {
            y += kLaneHeight;
        }
    }
    return y;
}

void TimelineWidget::zoom(double factor, double anchor_x) {
    const double anchor = t_of(anchor_x);
    const double span = std::max((t1_ - t0_) * factor, 1e-3);
    const double left_fraction = (anchor - t0_) / (t1_ - t0_);
    set_window(anchor - span * left_fraction, anchor - span * left_fraction + span);
}

void TimelineWidget::pan_pixels(double dx) {
    const double dt = dx / std::max(1, width() - kLabelWidth) * (t1_ - t0_);
    set_window(t0_ - dt, t1_ - dt);
}

void TimelineWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette& pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    drawn_ = 0;
    if (!trace_ || trace_->lanes.empty()) {
        p.setPen(pal.color(QPalette::Text));
        p.drawText(rect(), Qt::AlignCenter,
                   tr("No trace. Runs captured with --trace show their timeline here."));
        return;
    }
    // Time axis with about one tick per 100 px.
    p.setPen(pal.color(QPalette::Text));
    const double span = t1_ - t0_;
    const double raw = span / std::max(1.0, (width() - kLabelWidth) / 100.0);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
    // Ticks at round multiples of the step in the time shown (from the trace's start), not in the
    // trace's own clock, whose origin is arbitrary.
    const double origin = trace_->begin_us;
    for (double r = std::ceil((t0_ - origin) / step) * step; origin + r < t1_; r += step) {
        const double x = x_of(origin + r);
        p.drawLine(QPointF(x, kAxisHeight - 6), QPointF(x, kAxisHeight));
        p.drawText(QPointF(x + 2, kAxisHeight - 8), format_us(r));
    }
    int rank = -1;
    int y = kAxisHeight;
    const QColor merged(0x70, 0x70, 0x78);
    const double xmin = kLabelWidth, xmax = width();
    for (std::size_t li = 0; li < trace_->lanes.size() && y < height(); ++li) {
        const TimelineLane& lane = trace_->lanes[li];
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
        const auto [first, last] = trace_->visible(lane, t0_, t1_);
        double block_x0 = -1, block_x1 = -1; // pending merged block of sub-pixel events
        auto flush = [&] {
            if (block_x1 >= block_x0 && block_x0 >= 0) {
                p.fillRect(QRectF(block_x0, y + 2, std::max(1.0, block_x1 - block_x0), kLaneHeight - 4),
                           merged);
                ++drawn_;
            }
            block_x0 = block_x1 = -1;
        };
        p.setPen(Qt::NoPen);
        for (std::size_t i = first; i < last; ++i) {
            const TimelineEvent& e = lane.events[i];
            const double x0 = std::max(xmin, x_of(e.start_us));
            const double x1 = std::min(xmax, x_of(e.start_us + e.duration_us));
            if (x1 - x0 < 1.0) {
                if (block_x0 >= 0 && x0 <= block_x1 + 1.0) {
                    block_x1 = std::max(block_x1, x1);
                } else {
                    flush();
                    block_x0 = x0;
                    block_x1 = x1;
                }
                continue;
            }
            flush();
            const QRectF r(x0, y + 2, x1 - x0, kLaneHeight - 4);
            p.fillRect(r, color_of(e.name));
            ++drawn_;
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
        y += kLaneHeight;
    }
}

bool TimelineWidget::hit(QPointF pos, std::size_t* lane_out, std::size_t* event_out) const {
    if (!trace_ || pos.x() < kLabelWidth) {
        return false;
    }
    for (std::size_t li = 0; li < trace_->lanes.size(); ++li) {
        const int top = lane_top(li);
        if (pos.y() < top || pos.y() >= top + kLaneHeight) {
            continue;
        }
        const TimelineLane& lane = trace_->lanes[li];
        // Accept a 2-pixel slop so that thin events can be picked.
        const double slop = 2.0 / std::max(1, width() - kLabelWidth) * (t1_ - t0_);
        const double t = t_of(pos.x());
        const auto [first, last] = trace_->visible(lane, t - slop, t + slop);
        for (std::size_t i = first; i < last; ++i) {
            *lane_out = li;
            *event_out = i;
            return true;
        }
        return false;
    }
    return false;
}

void TimelineWidget::select_at(QPointF pos) {
    std::size_t lane = 0, event = 0;
    if (!hit(pos, &lane, &event)) {
        selected_lane_ = selected_event_ = SIZE_MAX;
        emit selection_changed({});
        update();
        return;
    }
    selected_lane_ = lane;
    selected_event_ = event;
    const TimelineLane& l = trace_->lanes[lane];
    const TimelineEvent& e = l.events[event];
    emit selection_changed(tr("<b>%1</b> · rank %2, %3 · start %4 · duration %5")
                               .arg(QString::fromStdString(trace_->names[e.name]).toHtmlEscaped())
                               .arg(l.rank)
                               .arg(QString::fromStdString(l.name))
                               .arg(format_us(e.start_us - trace_->begin_us))
                               .arg(format_us(e.duration_us)));
    update();
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
    const double steps = event->angleDelta().y() / 120.0;
    if (event->modifiers() & Qt::ShiftModifier) {
        pan_pixels(steps * 60);
    } else {
        zoom(std::pow(0.8, steps), event->position().x());
    }
    event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) {
        dragging_ = true;
        moved_ = false;
        drag_from_ = event->position();
        drag_t0_ = t0_;
    }
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
    if (!dragging_) {
        return;
    }
    const double dx = event->position().x() - drag_from_.x();
    moved_ = moved_ || std::fabs(dx) > 3;
    const double span = t1_ - t0_;
    const double t0 = drag_t0_ - dx / std::max(1, width() - kLabelWidth) * span;
    set_window(t0, t0 + span);
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
    if (dragging_ && !moved_) {
        select_at(event->position());
    }
    dragging_ = false;
}

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
    switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
        zoom(0.5, (kLabelWidth + width()) / 2.0);
        break;
    case Qt::Key_Minus:
        zoom(2.0, (kLabelWidth + width()) / 2.0);
        break;
    case Qt::Key_Left:
        pan_pixels(100);
        break;
    case Qt::Key_Right:
        pan_pixels(-100);
        break;
    case Qt::Key_Home:
        if (trace_) {
            set_window(trace_->begin_us, trace_->end_us);
        }
        break;
    default:
        QWidget::keyPressEvent(event);
    }
}

} // namespace pkbw::app
