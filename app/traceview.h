// The Trace tab: the timeline of the open run's traces (trace artifacts: Chrome/Kineto JSON per
// rank), the selected event's details, and opening a trace file directly.
#pragma once

#include "rundata.h"

#include <QWidget>
#include <memory>

class QLabel;

namespace pkbw::app {

class TimelineWidget;

class TraceView : public QWidget {
    Q_OBJECT
public:
    explicit TraceView(QWidget* parent = nullptr);
    void set_data(std::shared_ptr<const RunData> data);
    void open_files(const QStringList& files);
    TimelineWidget* timeline() const { return timeline_; }

signals:
    void loaded();

private:
    TimelineWidget* timeline_ = nullptr;
    QLabel* info_ = nullptr;
    QLabel* details_ = nullptr;
};

} // namespace pkbw::app
