#include "timelinewidget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace pkbw::app {
namespace {

// A ruler label: `us` in the unit the tick step calls for, with as many decimals as the step needs,
// so that neighbouring ticks never read the same at any zoom.
QString format_tick(double us, double step_us) {
    struct Unit {
        double scale;
        const char* name;
    };
    const Unit unit = step_us >= 1e5   ? Unit{1e6, " s"}
                      : step_us >= 100 ? Unit{1e3, " ms"}
                      : step_us >= 0.1 ? Unit{1, " µs"}
                                       : Unit{1e-3, " ns"};
    const double step = step_us / unit.scale;
    const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    double v = us / unit.scale;
    if (std::fabs(v) < step * 1e-6) {
        v = 0; // no "-0"
    }
    return QString::number(v, 'f', decimals) + QString::fromUtf8(unit.name);
}

} // namespace

QString format_us(double us) {
    // Three decimals in every unit, as the trace summary prints its times: one selection never reads
    // "44.9995 µs" in one place and "45.000 µs" in another.
    if (std::fabs(us) >= 1e6) {
        return QString::number(us / 1e6, 'f', 3) + QStringLiteral(" s");
    }
    if (std::fabs(us) >= 1e3) {
        return QString::number(us / 1e3, 'f', 3) + QStringLiteral(" ms");
    }
    return QString::number(us, 'f', 3) + QStringLiteral(" µs");
}

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
    partners_.clear();
    area_t0_ = area_t1_ = 0;
    highlight_.clear();
    match_.clear();
    lane_tops_.clear();
    if (trace_) {
        // Lane tops once per trace: a rank header above each rank's first lane, nested rows stacked.
        int y = kAxisHeight, rank = -1;
        for (const auto& lane : trace_->lanes) {
            if (lane.rank != rank) {
                rank = lane.rank;
                y += kRankHeader;
            }
            lane_tops_.push_back(y);
            y += kLaneHeight * lane.depths;
        }
    }
    if (trace_ && trace_->end_us > trace_->begin_us) {
        const auto [t0, t1] = trace_->focus();
        set_window(t0, t1);
    } else {
        update();
    }
}

double TimelineWidget::origin_us() const {
    if (!trace_) {
        return 0;
    }
    return trace_->iterations.empty() ? trace_->begin_us : trace_->iterations.front().start_us;
}

std::vector<TimelineWidget::Tick> TimelineWidget::ticks() const {
    std::vector<Tick> out;
    if (!trace_) {
        return out;
    }
    // About one tick per 100 px, at round multiples of the step from the origin (the first traced
    // iteration, or the trace's start), not in the trace's own clock, whose origin is arbitrary.
    const double span = t1_ - t0_;
    const double raw = span / std::max(1.0, (width() - kLabelWidth) / 100.0);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
    const double origin = origin_us();
    const double first = std::ceil((t0_ - origin) / step);
    for (int k = 0; k < 1000; ++k) {
        const double r = (first + k) * step;
        if (origin + r >= t1_) {
            break;
        }
        out.push_back({x_of(origin + r), format_tick(r, step)});
    }
    return out;
}

QStringList TimelineWidget::tick_labels() const {
    QStringList labels;
    for (const Tick& t : ticks()) {
        labels << t.label;
    }
    return labels;
}

int TimelineWidget::lane_height(std::size_t lane) const {
    return trace_ && lane < trace_->lanes.size() ? kLaneHeight * trace_->lanes[lane].depths : kLaneHeight;
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
    return lane < lane_tops_.size() ? lane_tops_[lane] : kAxisHeight;
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

bool TimelineWidget::hit(QPointF pos, std::size_t* lane_out, std::size_t* event_out) const {
    if (!trace_ || pos.x() < kLabelWidth) {
        return false;
    }
    for (std::size_t li = 0; li < trace_->lanes.size(); ++li) {
        const int top = lane_top(li);
        if (pos.y() < top || pos.y() >= top + lane_height(li)) {
            continue;
        }
        const TimelineLane& lane = trace_->lanes[li];
        const int depth = static_cast<int>((pos.y() - top) / kLaneHeight);
        // Accept a 2-pixel slop so that thin events can be picked.
        const double slop = 2.0 / std::max(1, width() - kLabelWidth) * (t1_ - t0_);
        const double t = t_of(pos.x());
        const auto [first, last] = trace_->visible(lane, t - slop, t + slop);
        for (std::size_t i = first; i < last; ++i) {
            if (lane.events[i].depth != depth) {
                continue;
            }
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
        partners_.clear();
        emit selection_changed({});
        update();
        return;
    }
    select_event(lane, event);
}

void TimelineWidget::select_event(std::size_t lane, std::size_t event) {
    selected_lane_ = lane;
    selected_event_ = event;
    partners_ = trace_->correlated(lane, event);
    const TimelineLane& l = trace_->lanes[lane];
    const TimelineEvent& e = l.events[event];
    const std::string& detail = e.detail < trace_->details.size() ? trace_->details[e.detail] : std::string();
    emit selection_changed(
        tr("<b>%1</b> · rank %2, %3 · start %4 (from the first traced iteration) · "
           "duration %5%6%7 · double-click or F: zoom to it")
            .arg(QString::fromStdString(trace_->names[e.name]).toHtmlEscaped())
            .arg(l.rank)
            .arg(QString::fromStdString(l.name))
            .arg(format_us(e.start_us - origin_us()))
            .arg(format_us(e.duration_us))
            .arg(detail.empty() ? QString()
                                : QStringLiteral(" · ") + QString::fromStdString(detail).toHtmlEscaped())
            .arg(flow_text()));
    update();
}

std::size_t TimelineWidget::set_highlight(const QString& text) {
    highlight_ = text.trimmed();
    match_.assign(trace_ ? trace_->names.size() : 0, false);
    const QString needle = highlight_.toLower();
    for (std::size_t i = 0; i < match_.size() && !needle.isEmpty(); ++i) {
        match_[i] = QString::fromStdString(trace_->names[i]).toLower().contains(needle);
    }
    update();
    return trace_ && !needle.isEmpty() ? trace_->count_matching(highlight_.toStdString()) : 0;
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
    if (event->button() == Qt::LeftButton && (event->modifiers() & Qt::ControlModifier)) {
        selecting_ = true;
        drag_from_ = event->position();
        return;
    }
    if (event->button() == Qt::LeftButton) {
        dragging_ = true;
        moved_ = false;
        drag_from_ = event->position();
        drag_t0_ = t0_;
    }
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
    if (selecting_) {
        const double a = t_of(drag_from_.x()), b = t_of(event->position().x());
        area_t0_ = std::min(a, b);
        area_t1_ = std::max(a, b);
        update();
        return;
    }
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
    if (selecting_) {
        selecting_ = false;
        const double a = t_of(drag_from_.x()), b = t_of(event->position().x());
        select_area(std::min(a, b), std::fabs(b - a) < (t1_ - t0_) / 1000 ? std::min(a, b) : std::max(a, b));
        return;
    }
    if (dragging_ && !moved_) {
        select_at(event->position());
    }
    dragging_ = false;
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent* event) {
    select_at(event->position());
    if (selected_event_ != SIZE_MAX) {
        const double keep_t0 = area_t0_, keep_t1 = area_t1_;
        area_t0_ = area_t1_ = 0; // the event, not the area
        zoom_to_selection();
        area_t0_ = keep_t0;
        area_t1_ = keep_t1;
    }
}

void TimelineWidget::select_area(double t0, double t1) {
    if (t1 > t0) {
        area_t0_ = t0;
        area_t1_ = t1;
    } else {
        area_t0_ = area_t1_ = 0;
    }
    update();
    emit area_changed(area_t0_, area_t1_);
}

bool TimelineWidget::zoom_to_selection() {
    if (area_t1_ > area_t0_) {
        const double m = (area_t1_ - area_t0_) * 0.05;
        set_window(area_t0_ - m, area_t1_ + m);
        return true;
    }
    if (trace_ && selected_lane_ < trace_->lanes.size()) {
        const TimelineEvent& e = trace_->lanes[selected_lane_].events[selected_event_];
        const double d = std::max(e.duration_us, 1e-3);
        set_window(e.start_us - d * 0.25, e.start_us + d * 1.25);
        return true;
    }
    return false;
}

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
    switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
    case Qt::Key_W:
        zoom(0.5, (kLabelWidth + width()) / 2.0);
        break;
    case Qt::Key_Minus:
    case Qt::Key_S:
        zoom(2.0, (kLabelWidth + width()) / 2.0);
        break;
    case Qt::Key_Left:
    case Qt::Key_A:
        pan_pixels(100);
        break;
    case Qt::Key_Right:
    case Qt::Key_D:
        pan_pixels(-100);
        break;
    case Qt::Key_F:
        zoom_to_selection();
        break;
    case Qt::Key_J: // to the selected launch's kernel, or the selected kernel's launch
        follow_flow();
        break;
    case Qt::Key_Escape:
        select_area(0, 0);
        break;
    case Qt::Key_I: // back to the traced iterations
        if (trace_) {
            const auto [t0, t1] = trace_->focus();
            set_window(t0, t1);
        }
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
