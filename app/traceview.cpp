#include "traceview.h"

#include "pkbw/core/kineto.h"
#include "pkbw/core/trace_store.h"
#include "qtconvert.h"
#include "timelinewidget.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <filesystem>
#include <map>

namespace pkbw::app {
namespace {

// A recorded artifact path: absolute as stored, else relative to the run folder.
QString resolve_artifact(const RunData& data, const std::string& path) {
    const std::filesystem::path p(path);
    if (p.is_absolute() || data.run.run_dir.empty()) {
        return to_qstring(path);
    }
    return to_qstring((std::filesystem::path(data.run.run_dir) / p).string());
}

// Adds `from`'s lanes and iterations to `into`, its names merged with `into`'s.
void merge_timeline(TimelineData& into, TimelineData&& from) {
    std::map<std::string, std::uint32_t> index;
    for (std::size_t i = 0; i < into.names.size(); ++i) {
        index.emplace(into.names[i], static_cast<std::uint32_t>(i));
    }
    std::vector<std::uint32_t> renamed(from.names.size());
    for (std::size_t i = 0; i < from.names.size(); ++i) {
        auto [it, fresh] = index.try_emplace(from.names[i], static_cast<std::uint32_t>(into.names.size()));
        if (fresh) {
            into.names.push_back(from.names[i]);
        }
        renamed[i] = it->second;
    }
    for (auto& lane : from.lanes) {
        for (auto& e : lane.events) {
            e.name = renamed[e.name];
        }
        into.lanes.push_back(std::move(lane));
    }
    into.iterations.insert(into.iterations.end(), from.iterations.begin(), from.iterations.end());
}

} // namespace

QList<TraceFile> trace_artifacts(const RunData& data) {
    std::optional<int> taken; // the trial of the files taken; a run-wide file counts as trial -1
    QList<TraceFile> files;
    for (const ArtifactRow& a : data.artifacts) {
        QString side;
        if (a.kind == "trace_reference" || a.kind == "trace_candidate") {
            side = to_qstring(a.kind.substr(6)); // after "trace_"
        } else if (a.kind != "trace") {
            continue;
        }
        const int trial = a.trial.value_or(-1);
        if (taken && trial > *taken) {
            continue;
        }
        if (taken && trial < *taken) {
            files.clear(); // an earlier trial's
        }
        taken = trial;
        files.push_back({resolve_artifact(data, a.path), side});
    }
    return files;
}

QString no_trace_reason(const RunData& data) {
    bool traced = false, pkb = false, imported = false;
    for (const auto& arg : data.run.command_line) {
        traced = traced || arg == "--trace" || arg.rfind("--trace=", 0) == 0;
        pkb = pkb || arg == "--pkb-checkout" || arg.rfind("--pkb-checkout=", 0) == 0;
        imported = imported || arg == "import-pkb";
    }
    if (imported) {
        return TraceView::tr("This run was imported from PKB's logs (pkbw import-pkb), which held no "
                             "torch-profiler trace (traces/rank_<r>.json): PKB's run_local.py writes them "
                             "with --profile.");
    }
    if (!traced) {
        return TraceView::tr("This run has no trace: it was not run with --trace.");
    }
    if (data.run.status != RunStatus::Pass) {
        return TraceView::tr("This run was started with --trace, but it holds no trace: it ended (%1) "
                             "without its traced pass, which runs only after every trial passed.")
            .arg(status_text(data.run.status));
    }
    const QString backend = to_qstring(data.run.backend);
    if (pkb || backend.startsWith(QStringLiteral("pkb")) || data.run.solution_path.ends_with(".py")) {
        return TraceView::tr("This run was started with --trace, but it holds no trace: its PKB Python ranks "
                             "(backend %1) profile each side with torch's profiler after correctness; a "
                             "profiler that could not record is named in the rank logs (Sources tab), and "
                             "pkbw before this version did not profile them.")
            .arg(backend);
    }
    std::error_code ec;
    const auto dir = std::filesystem::path(data.run.run_dir) / "trace";
    if (!data.run.run_dir.empty() && std::filesystem::is_directory(dir, ec)) {
        return TraceView::tr("This run was started with --trace, but its traces were not stored: %1 exists; "
                             "pkbw reported why on stderr (\"traces not stored\").")
            .arg(to_qstring(dir.string()));
    }
    return TraceView::tr("This run was started with --trace, but no rank wrote a trace (no %1).")
        .arg(to_qstring(dir.string()));
}

TraceView::TraceView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    info_ = new QLabel(tr("No trace loaded."), this);
    info_->setObjectName(QStringLiteral("traceInfo"));
    info_->setWordWrap(true);
    top->addWidget(info_, 1);
    auto* zoom = new QPushButton(tr("Zoom to selection (F)"), this);
    auto* iterations = new QPushButton(tr("Traced iterations (I)"), this);
    auto* open = new QPushButton(tr("Open trace files…"), this);
    search_ = new QLineEdit(this);
    search_->setObjectName(QStringLiteral("traceSearch"));
    search_->setPlaceholderText(tr("Search events by name (Enter)"));
    search_->setClearButtonEnabled(true);
    top->addWidget(search_);
    top->addWidget(zoom);
    top->addWidget(iterations);
    top->addWidget(open);
    layout->addLayout(top);
    auto* split = new QSplitter(Qt::Vertical, this);
    timeline_ = new TimelineWidget(split);
    timeline_->setObjectName(QStringLiteral("timeline"));
    split->addWidget(timeline_);
    auto* bottom = new QWidget(split);
    auto* bottom_layout = new QVBoxLayout(bottom);
    bottom_layout->setContentsMargins(0, 0, 0, 0);
    details_ =
        new QLabel(tr("Click an event for its details. Wheel or W/S: zoom, drag, Shift+wheel or A/D: pan, "
                      "double-click or F: zoom to an event, Ctrl+drag: select an area (summarised "
                      "below; Esc clears), I: traced iterations, Home: all."),
                   bottom);
    details_->setObjectName(QStringLiteral("traceDetails"));
    details_->setWordWrap(true);
    details_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
    bottom_layout->addWidget(details_);
    summary_title_ = new QLabel(bottom);
    summary_title_->setObjectName(QStringLiteral("traceSummaryTitle"));
    summary_title_->setWordWrap(true); // a long caption must not widen the window past the screen
    bottom_layout->addWidget(summary_title_);
    QSplitter* tables = make_tables(bottom);
    bottom_layout->addWidget(tables, 1);
    split->addWidget(bottom);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);
    connect(timeline_, &TimelineWidget::selection_changed, details_, &QLabel::setText);
    connect(details_, &QLabel::linkActivated, timeline_, [this] { timeline_->follow_flow(); });
    connect(search_, &QLineEdit::returnPressed, this, [this] { search(search_->text()); });
    connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) {
        if (text.isEmpty()) {
            search(QString());
        }
    });
    connect(summary_, &QTableWidget::cellDoubleClicked, this,
            [this](int row, int) { activate_summary_row(row); });
    connect(summary_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
        if (item->column() == 8 && (item->flags() & Qt::ItemIsUserCheckable)) {
            set_communication_mark(item->data(Qt::UserRole).toString(), item->checkState() == Qt::Checked);
        }
    });
    connect(timeline_, &TimelineWidget::area_changed, this, &TraceView::update_summary);
    connect(zoom, &QPushButton::clicked, timeline_, &TimelineWidget::zoom_to_selection);
    connect(iterations, &QPushButton::clicked, this, [this] {
        if (timeline_->trace()) {
            const auto [t0, t1] = timeline_->trace()->focus();
            timeline_->set_window(t0, t1);
        }
    });
    connect(open, &QPushButton::clicked, this, [this] {
        const QStringList files = QFileDialog::getOpenFileNames(
            this, tr("Open traces (one per rank)"), QString(), tr("Traces (*.jsonl *.json);;All files (*)"));
        if (!files.isEmpty()) {
            open_files(files);
        }
    });
}

QString TraceView::info_text() const {
    return info_->text();
}

void TraceView::set_data(std::shared_ptr<const RunData> data) {
    data_ = data;
    trace_ = {};
    summary_->setRowCount(0);
    overlap_->setRowCount(0);
    summary_title_->clear();
    // Trace artifacts (PKB's torch-profiler traces, Chrome JSON): shown when the store holds none.
    const QList<TraceFile> files = data ? trace_artifacts(*data) : QList<TraceFile>{};
    if (data && data->from_store && !store_.isEmpty()) {
        info_->setText(tr("Loading the traces of run %1…").arg(data->run.id));
        const auto id = data->run.id;
        run_in_background(
            this,
            [p = to_path(store_), id] {
                const Store store = Store::open_read_only(p);
                auto traces = std::make_shared<std::vector<RankTrace>>(load_run_traces(store, id));
                LoadedTrace t;
                t.timeline = std::make_shared<const TimelineData>(timeline_from_traces(*traces));
                t.traces = std::move(traces);
                return t;
            },
            [this, files, data](const Loaded<LoadedTrace>& r) {
                if (r.ok() && r.value.timeline->lanes.empty()) {
                    if (!files.isEmpty()) {
                        open_trace_files(files);
                        return;
                    }
                    timeline_->set_trace(nullptr);
                    info_->setText(no_trace_reason(*data));
                    return;
                }
                show_timeline(r);
            });
        return;
    }
    if (files.isEmpty()) {
        timeline_->set_trace(nullptr);
        info_->setText(data ? no_trace_reason(*data) : tr("No run open."));
        return;
    }
    open_trace_files(files);
}

void TraceView::open_files(const QStringList& files) {
    QList<TraceFile> unlabelled;
    for (const QString& f : files) {
        unlabelled.push_back({f, QString()});
    }
    open_trace_files(unlabelled);
}

void TraceView::open_trace_files(const QList<TraceFile>& files) {
    info_->setText(tr("Loading %1 trace files…").arg(files.size()));
    run_in_background(
        this,
        [files] {
            auto data = std::make_shared<TimelineData>();
            static const QRegularExpression rank_re(QStringLiteral("rank_?(\\d+)"));
            auto own = std::make_shared<std::vector<RankTrace>>(); // pkbw's JSON-lines traces
            for (int i = 0; i < files.size(); ++i) {
                const QString& path = files[i].path;
                if (path.endsWith(QStringLiteral(".jsonl"))) {
                    own->push_back(load_trace_file(to_path(path)));
                    continue;
                }
                // The rank from the file's name (PKB: traces/rank_<r>.json), not from its folders'.
                const auto m = rank_re.match(QFileInfo(path).fileName());
                const int rank = m.hasMatch() ? m.captured(1).toInt() : i;
                TimelineData one;
                append_chrome_trace(one, to_path(path), rank);
                const std::string side = to_std(files[i].side);
                for (auto& lane : one.lanes) {
                    if (!side.empty()) {
                        lane.name = side + " " + lane.name;
                    }
                    for (const auto& e : lane.events) {
                        if (one.names[e.name].starts_with("ProfilerStep#")) {
                            one.iterations.push_back({rank, side.empty() ? std::string("trace") : side,
                                                      e.start_us, e.start_us + e.duration_us});
                        }
                    }
                }
                merge_timeline(*data, std::move(one));
            }
            if (!own->empty()) {
                merge_timeline(*data, timeline_from_traces(*own));
            }
            data->finish();
            LoadedTrace t;
            t.timeline = std::move(data);
            t.traces = std::move(own);
            return t;
        },
        [this](const Loaded<LoadedTrace>& r) { show_timeline(r); });
}

void TraceView::show_timeline(const Loaded<LoadedTrace>& r) {
    if (!r.ok()) {
        info_->setText(tr("Could not read the trace: %1").arg(r.error));
        return;
    }
    trace_ = r.value;
    timeline_->set_trace(trace_.timeline);
    const auto& tl = *trace_.timeline;
    const std::string alone = tl.focus_side();
    const auto shown =
        std::count_if(tl.iterations.begin(), tl.iterations.end(),
                      [&](const IterationSpan& it) { return alone.empty() || it.side == alone; });
    QString text =
        tl.iterations.empty() ? tr("%1 events in %2 lanes").arg(tl.event_count()).arg(tl.lanes.size())
        : alone.empty()
            ? tr("%1 events in %2 lanes; opened on the %3 traced iterations (ruler from the first)")
                  .arg(tl.event_count())
                  .arg(tl.lanes.size())
                  .arg(tl.iterations.size())
            : tr("%1 events in %2 lanes; opened on the %3's %4 traced iterations (ruler from the first of "
                 "all): "
                 "the sides' iterations lie far apart; Home shows all")
                  .arg(tl.event_count())
                  .arg(tl.lanes.size())
                  .arg(to_qstring(alone))
                  .arg(shown);
    if (trace_.traces && pkbw::profiles_placed_end_to_end(*trace_.traces)) {
        text += tr(". The reference's and the candidate's torch-profiler profiles are placed end to end: "
                   "they were recorded on unrelated clocks, so the gap between them is not measured.");
    }
    info_->setText(text);
    update_summary(0, 0);
    emit loaded();
}

QString TraceView::summary_title() const {
    return summary_title_->text();
}

int TraceView::search(const QString& text) {
    const std::size_t n = timeline_->set_highlight(text);
    const auto trace = timeline_->trace();
    if (n > 0 && trace) {
        const auto [t0, t1] = trace->span_of(text.trimmed().toStdString());
        const double margin = std::max(1.0, (t1 - t0) * 0.05);
        timeline_->set_window(t0 - margin, t1 + margin);
    }
    details_->setText(
        text.trimmed().isEmpty() ? QString()
        : n > 0 ? tr("%n event(s) match \"%1\" (outlined; the others dimmed)", "", static_cast<int>(n))
                      .arg(text.trimmed().toHtmlEscaped())
                : tr("No event matches \"%1\".").arg(text.trimmed().toHtmlEscaped()));
    return static_cast<int>(n);
}

void TraceView::activate_summary_row(int row) {
    const auto trace = timeline_->trace();
    if (!trace || row < 0 || row >= summary_->rowCount() || !summary_->item(row, 3)) {
        return;
    }
    const QString name = summary_->item(row, 3)->data(Qt::UserRole).toString();
    const int rank = summary_->item(row, 1)->data(Qt::DisplayRole).toInt();
    const QString side = summary_->item(row, 0)->text();
    timeline_->set_highlight(name);
    // The row's events: on its rank, within its side's traced iterations (or the summarised window).
    double t0 = summary_t0_, t1 = summary_t1_;
    if (!(t1 > t0)) {
        bool any = false;
        for (const IterationSpan& it : trace->iterations) {
            if (it.rank == rank && QString::fromStdString(it.side) == side) {
                t0 = any ? std::min(t0, it.start_us) : it.start_us;
                t1 = any ? std::max(t1, it.end_us) : it.end_us;
                any = true;
            }
        }
    }
    const auto [a, b] = trace->span_of(name.toStdString(), rank, t0, t1);
    if (b > a) {
        const double margin = std::max(0.5, (b - a) * 0.05);
        timeline_->set_window(a - margin, b + margin);
    }
}

void TraceView::set_communication_mark(const QString& name, bool communication) {
    const std::string key = name.toStdString();
    if (communication == (marks_.count(key) > 0)) {
        return;
    }
    if (communication) {
        marks_.insert(key);
    } else {
        marks_.erase(key);
    }
    update_summary(summary_t0_, summary_t1_);
}

void TraceView::update_summary(double t0_us, double t1_us) {
    summary_t0_ = t0_us;
    summary_t1_ = t1_us;
    const QSignalBlocker block(summary_); // filling must not read as the user's ticks
    summary_->setSortingEnabled(false);
    summary_->setRowCount(0);
    overlap_->setRowCount(0);
    if (!trace_.traces || trace_.traces->empty()) {
        summary_title_->setText(trace_.timeline ? tr("No summary: these trace files are not pkbw traces.")
                                                : QString());
        return;
    }
    std::optional<std::pair<std::int64_t, std::int64_t>> window;
    if (t1_us > t0_us) {
        window = std::pair{static_cast<std::int64_t>(t0_us * 1e3), static_cast<std::int64_t>(t1_us * 1e3)};
        summary_title_->setText(tr("Summary of the selection (%1 µs, the iterations inside it, clipped)")
                                    .arg(t1_us - t0_us, 0, 'f', 3));
    } else {
        summary_title_->setText(
            tr("Summary of the traced iterations, by side and rank (Ctrl+drag to select an "
               "area; double-click a row to see and zoom to its events). Overlap: the share of "
               "communication time during which computation ran, as HTA computes it; communication is "
               "NCCL kernels and the device work NCCL's calls start, peer copies, kernels given a pointer "
               "into a peer's memory (seen by the tracer), kernels whose names say peer, P2P, IPC or a "
               "collective, and the kernels you tick in the Comm column (a candidate's own peer-memory "
               "kernel the tracer could not see otherwise reads as computation)"));
    }
    const TraceSummary s = summarize_trace(*trace_.traces, window, marks_);
    if (s.rows.empty()) {
        summary_title_->setText(summary_title_->text() +
                                tr(" — no kernels, copies or NVTX ranges in these iterations (a host-backend "
                                   "trace holds the engine's ranges only)"));
    }
    fill_tables(s);
}

} // namespace pkbw::app
