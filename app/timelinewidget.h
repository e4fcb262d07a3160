// A multi-rank timeline painted with QPainter: a lane group per rank, a lane per stream or NVTX
// track, nested ranges stacked in rows. Only the visible time window is visited (binary search per
// lane), and runs of events narrower than a pixel are merged into one block, so a frame costs
// O(pixels + visible wide events) however many events the trace holds. It opens on the traced
// iterations; the ruler reads time from the first traced iteration. Wheel / W S zoom, drag / A D pan,
// click selects, double-click or F zooms to the event (or the selected area), Ctrl+drag selects an area.
// A selected CUDA runtime call and the kernel it launched (one correlation id) are joined by an
// arrow, the other one outlined, and the selection line says the launch latency between them; J (or
// the line's link) jumps to the other one.
#pragma once

#include "tracedata.h"

#include <QStringList>
#include <QWidget>
#include <memory>
#include <utility>
#include <vector>

class QPainter;

namespace pkbw::app {

// A duration with three decimals in the unit it needs ("44.999 µs", "1.250 ms", "2.000 s"), as the
// trace summary prints its times.
QString format_us(double us);

class TimelineWidget : public QWidget {
    Q_OBJECT
public:
    explicit TimelineWidget(QWidget* parent = nullptr);

    void set_trace(std::shared_ptr<const TimelineData> trace);
    std::shared_ptr<const TimelineData> trace() const { return trace_; }
    void set_window(double t0_us, double t1_us);
    double window_begin() const { return t0_; }
    double window_end() const { return t1_; }
    void zoom(double factor, double anchor_x);
    void pan_pixels(double dx);
    // Lane and event under a widget position; false when none.
    bool hit(QPointF pos, std::size_t* lane, std::size_t* event) const;
    void select_at(QPointF pos);
    void select_event(std::size_t lane, std::size_t event);
    // Selects the selected event's launch or kernel (its first flow partner), outlined while the
    // other is selected, and brings it into view: the window keeps its span, centred on it when it
    // lies outside. J, or the link in the selection line. False when the selection has no partner.
    bool follow_flow();
    // Zooms to the selected area, else to the selected event (with a margin); false when neither.
    bool zoom_to_selection();
    void select_area(double t0_us, double t1_us); // t1 <= t0 clears
    // Events whose name contains `text` (case-insensitive) are outlined and the others dimmed; ""
    // clears. Returns how many events match.
    std::size_t set_highlight(const QString& text);
    QString highlight() const { return highlight_; }
    bool highlighted(std::uint32_t name) const { return name < match_.size() && match_[name]; }
    std::pair<double, double> area() const { return {area_t0_, area_t1_}; }
    // The ruler's tick labels for the current window (tests): relative to origin_us().
    QStringList tick_labels() const;
    double origin_us() const;
    int lane_top(std::size_t lane) const;
    int lane_height(std::size_t lane) const;
    // The selected event's launch or kernel (its correlation id's other events on the rank).
    const std::vector<std::pair<std::size_t, std::size_t>>& flow_partners() const { return partners_; }
    // Rectangles drawn by the last paint (merged blocks count as one): for tests and the bench.
    std::size_t last_drawn() const { return drawn_; }

    QSize sizeHint() const override { return {900, 400}; }

signals:
    void selection_changed(const QString& details);
    void area_changed(double t0_us, double t1_us); // t1 <= t0: cleared

protected:
    void paintEvent(QPaintEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;

private:
    double x_of(double t) const;
    QString flow_text() const;          // the selected event's launch or kernel, in words
    void draw_flows(QPainter& p) const; // arrows from a launch to its kernel
    void draw_lane_events(QPainter& p, std::size_t lane, int y);
    void draw_area(QPainter& p) const;
    double t_of(double x) const;
    struct Tick {
        double x;
        QString label;
    };
    std::vector<Tick> ticks() const;

    std::shared_ptr<const TimelineData> trace_;
    double t0_ = 0, t1_ = 1;
    static constexpr int kLabelWidth = 170, kLaneHeight = 18, kRankHeader = 16, kAxisHeight = 22;
    bool dragging_ = false;
    QPointF drag_from_;
    double drag_t0_ = 0;
    bool moved_ = false;
    bool selecting_ = false;
    double area_t0_ = 0, area_t1_ = 0;
    std::vector<int> lane_tops_;
    std::size_t selected_lane_ = SIZE_MAX, selected_event_ = SIZE_MAX;
    // The selected event's launch or kernel (same correlation id on its rank), as (lane, event).
    std::vector<std::pair<std::size_t, std::size_t>> partners_;
    std::size_t drawn_ = 0;
    QString highlight_;
    std::vector<bool> match_; // per name index: matches highlight_
};

} // namespace pkbw::app
