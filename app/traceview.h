// The Trace tab: the timeline of the open run's traces (the store's, else trace artifacts: Chrome /
// Kineto JSON per rank), opened on the traced iterations; the selected event's details; and the
// summary of the iterations (or of a Ctrl+drag selection) by side and rank: kernels, copies and NVTX
// ranges with count, total, mean and % of iteration, and the comm/compute overlap per side and rank.
#pragma once

#include "background.h"
#include "rundata.h"
#include "tracedata.h"
#include "tracesummary.h"

#include <QWidget>
#include <memory>

class QLabel;
class QLineEdit;
class QSplitter;
class QTableWidget;

namespace pkbw::app {

class TimelineWidget;

struct LoadedTrace {
    std::shared_ptr<const TimelineData> timeline;
    std::shared_ptr<const std::vector<RankTrace>> traces; // pkbw's own traces (summary); may be empty
};

// A trace file a run recorded as an artifact, and the side it traced (empty when its kind names none).
struct TraceFile {
    QString path;
    QString side;
};

// The trace files the Trace tab opens when the store holds no trace of the run: artifacts of kind
// "trace" (Chrome / Kineto JSON or pkbw JSON lines, one per rank) and import-pkb's "trace_reference"
// and "trace_candidate" (PKB's torch-profiler traces), of the first trial that has any (the trial
// import-pkb stores as the run's trace); paths resolved against the run folder.
QList<TraceFile> trace_artifacts(const RunData& data);

// Why a run holds no trace, in one sentence for the user: it was not traced, or it was traced with
// --trace and nothing was stored (and why, as far as the run record tells).
QString no_trace_reason(const RunData& data);

class TraceView : public QWidget {
    Q_OBJECT
public:
    explicit TraceView(QWidget* parent = nullptr);
    void set_store(const QString& path) { store_ = path; }
    void set_data(std::shared_ptr<const RunData> data);
    void open_files(const QStringList& files);
    // Chrome / Kineto files of a side get lanes named "<side> <lane>", and their "ProfilerStep#N"
    // ranges (torch-profiler steps) are the side's traced iterations.
    void open_trace_files(const QList<TraceFile>& files);
    TimelineWidget* timeline() const { return timeline_; }
    QTableWidget* summary_table() const { return summary_; }
    QTableWidget* overlap_table() const { return overlap_; }
    QString info_text() const;
    QString summary_title() const;
    // Search: events whose name contains `text` are outlined, the others dimmed, and the view zooms
    // to their span; returns how many match ("" clears).
    int search(const QString& text);
    // A summary row: highlights its events (its name) and zooms to them on its side and rank within
    // the traced iterations (what a double click or Enter on the row does).
    void activate_summary_row(int row);
    // Kernels the user counts as communication in the overlap (by name; right-click a summary row).
    void set_communication_mark(const QString& name, bool communication);
    const std::set<std::string>& communication_marks() const { return marks_; }

signals:
    void loaded();

private:
    void show_timeline(const Loaded<LoadedTrace>& result);
    void update_summary(double t0_us, double t1_us);
    // The summary and overlap tables (traceview_tables.cpp): made side by side in a splitter under
    // `parent`, and filled from a summary (the summary's sorting left on).
    QSplitter* make_tables(QWidget* parent);
    void fill_tables(const TraceSummary& s);

    QString store_;
    std::shared_ptr<const RunData> data_;
    LoadedTrace trace_;
    TimelineWidget* timeline_ = nullptr;
    QLabel* info_ = nullptr;
    QLabel* details_ = nullptr;
    QLabel* summary_title_ = nullptr;
    QTableWidget* summary_ = nullptr;
    QTableWidget* overlap_ = nullptr;
    QLineEdit* search_ = nullptr;
    std::set<std::string> marks_;
    double summary_t0_ = 0, summary_t1_ = 0; // the window of the summary shown
};

} // namespace pkbw::app
