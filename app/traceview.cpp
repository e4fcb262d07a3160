#include "traceview.h"

#include "pkbw/core/trace_store.h"
#include "qtconvert.h"
#include "timelinewidget.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

namespace pkbw::app {

TraceView::TraceView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    info_ = new QLabel(tr("No trace loaded."), this);
    info_->setObjectName(QStringLiteral("traceInfo"));
    top->addWidget(info_, 1);
    auto* open = new QPushButton(tr("Open trace files…"), this);
    top->addWidget(open);
    layout->addLayout(top);
    timeline_ = new TimelineWidget(this);
    timeline_->setObjectName(QStringLiteral("timeline"));
    layout->addWidget(timeline_, 1);
    details_ = new QLabel(
        tr("Click an event for its details. Wheel: zoom, drag or Shift+wheel: pan, Home: all."), this);
    details_->setObjectName(QStringLiteral("traceDetails"));
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(details_);
    connect(timeline_, &TimelineWidget::selection_changed, details_, &QLabel::setText);
    connect(open, &QPushButton::clicked, this, [this] {
        const QStringList files = QFileDialog::getOpenFileNames(
            this, tr("Open traces (one per rank)"), QString(), tr("Traces (*.jsonl *.json);;All files (*)"));
        if (!files.isEmpty()) {
            open_files(files);
        }
    });
}

void TraceView::set_data(std::shared_ptr<const RunData> data) {
    if (data && data->from_store && !store_.isEmpty()) {
        info_->setText(tr("Loading the traces of run %1…").arg(data->run.id));
        const auto id = data->run.id;
        run_in_background(
            this,
            [p = to_path(store_), id] {
                const Store store = Store::open_read_only(p);
                return std::make_shared<const TimelineData>(timeline_from_traces(load_run_traces(store, id)));
            },
            [this](const Loaded<std::shared_ptr<const TimelineData>>& r) {
                if (r.ok() && r.value->lanes.empty()) {
                    timeline_->set_trace(nullptr);
                    info_->setText(tr("This run has no trace (run with --trace)."));
                    return;
                }
                show_timeline(r);
            });
        return;
    }
    QStringList files;
    if (data) {
        for (const ArtifactRow& a : data->artifacts) {
            if (a.kind == "trace") {
                files << to_qstring(a.path);
            }
        }
    }
    if (files.isEmpty()) {
        timeline_->set_trace(nullptr);
        info_->setText(tr("This run has no trace (run with --trace)."));
        return;
    }
    open_files(files);
}

void TraceView::open_files(const QStringList& files) {
    info_->setText(tr("Loading %1 trace files…").arg(files.size()));
    run_in_background(
        this,
        [files] {
            auto data = std::make_shared<TimelineData>();
            static const QRegularExpression rank_re(QStringLiteral("rank_?(\\d+)"));
            for (int i = 0; i < files.size(); ++i) {
                const auto m = rank_re.match(files[i]);
                append_chrome_trace(*data, to_path(files[i]), m.hasMatch() ? m.captured(1).toInt() : i);
            }
            return std::shared_ptr<const TimelineData>(std::move(data));
        },
        [this](Loaded<std::shared_ptr<const TimelineData>> r) {
            if (!r.ok()) {
                info_->setText(tr("Could not read the trace: %1").arg(r.error));
                return;
            }
            timeline_->set_trace(r.value);
            info_->setText(
                tr("%1 events in %2 lanes").arg(r.value->event_count()).arg(r.value->lanes.size()));
            emit loaded();
        });
}

} // namespace pkbw::app
