// The Trace tab: the timeline of the open run's traces (trace artifacts: Chrome/Kineto JSON per
// rank), the selected event's details, and opening a trace file directly.
#pragma once

#include "background.h"
#include "rundata.h"
#include "tracedata.h"

#include <QWidget>
#include <memory>

class QLabel;

namespace pkbw::app {

class TimelineWidget;

class TraceView : public QWidget {
    Q_OBJECT
public:
    explicit TraceView(QWidget* parent = nullptr);
    void set_store(const QString& path) { store_ = path; }
    void set_data(std::shared_ptr<const RunData> data);
    void open_files(const QStringList& files);
    TimelineWidget* timeline() const { return timeline_; }

signals:
    void loaded();

private:
    void show_timeline(const Loaded<std::shared_ptr<const TimelineData>>& result);

    QString store_;
    TimelineWidget* timeline_ = nullptr;
    QLabel* info_ = nullptr;
    QLabel* details_ = nullptr;
};

} // namespace pkbw::app
