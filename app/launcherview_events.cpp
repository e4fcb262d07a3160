// LauncherView's side of the running pkbw process: its stdout/stderr lines, the protocol events they carry
// (docs/formats.md, "Events"), and what they update: one progress bar per rank, the log, the status line.
#include "launcherview.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"
#include "pkbw/core/store.h"
#include "qtconvert.h"

#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QVBoxLayout>
#include <algorithm>

namespace pkbw::app {

void LauncherView::set_bar(int rank, const QString& text, const QColor& color) {
    if (rank < 0 || rank >= static_cast<int>(bars_.size())) {
        return;
    }
    QProgressBar* b = bars_[static_cast<std::size_t>(rank)];
    b->setFormat(text);
    b->setStyleSheet(color.isValid()
                         ? QStringLiteral("QProgressBar::chunk { background: %1; }").arg(color.name())
                         : QString());
}

QString LauncherView::rank_text(int rank) const {
    return rank >= 0 && rank < static_cast<int>(bars_.size())
               ? bars_[static_cast<std::size_t>(rank)]->format()
               : QString();
}
const QProgressBar* LauncherView::rank_bar(int rank) const {
    return rank >= 0 && rank < static_cast<int>(bars_.size()) ? bars_[static_cast<std::size_t>(rank)]
                                                              : nullptr;
}
void LauncherView::ensure_ranks(int count) {
    while (static_cast<int>(bars_.size()) < count) {
        const int rank = static_cast<int>(bars_.size());
        auto* bar = new QProgressBar(this);
        bar->setRange(0, 100);
        bar->setValue(0);
        bar->setFormat(tr("waiting"));
        // Centred: a bar given a colour is drawn by the style sheet, which puts a left-aligned text
        // at the top edge.
        bar->setAlignment(Qt::AlignCenter);
        progress_layout_->addWidget(new QLabel(tr("rank %1").arg(rank), this), rank, 0);
        progress_layout_->addWidget(bar, rank, 1);
        bars_.push_back(bar);
    }
    for (std::size_t i = 0; i < bars_.size(); ++i) {
        const bool visible = static_cast<int>(i) < count;
        bars_[i]->setVisible(visible);
        if (auto* item = progress_layout_->itemAtPosition(static_cast<int>(i), 0)) {
            item->widget()->setVisible(visible);
        }
    }
    if (static_cast<int>(trials_done_.size()) < count) {
        trials_done_.resize(static_cast<std::size_t>(count), 0);
    }
    if (verdicts_.size() < bars_.size()) {
        verdicts_.resize(bars_.size());
    }
}

QString LauncherView::interrupted_text(int rank) {
    // Where the rank was when it stopped, never a bar that reads "100%" for work not done.
    QProgressBar* b = bars_[static_cast<std::size_t>(rank)];
    if (b->maximum() == 0) { // the busy perf bar
        b->setRange(0, 1);
        b->setValue(0);
        return tr("interrupted while timing");
    }
    if (b->format().startsWith(QStringLiteral("perf · block"))) {
        return tr("interrupted in perf at block %1/%2").arg(b->value()).arg(b->maximum());
    }
    const int done = trials_done_[static_cast<std::size_t>(rank)];
    return tr("interrupted after %1 of %2 trials").arg(done).arg(trials_expected_);
}

QString LauncherView::progress_text(const nlohmann::json& body) {
    // As pkbw words the same progress on stderr without --json (engine/run/run_progress.cpp).
    const std::string stage = body.value("stage", std::string());
    const QString seconds = QString::number(body.value("seconds", 0.0), 'f', 2);
    auto number = [&body](const char* key) {
        return body.contains(key) && body[key].is_number_integer() ? body[key].get<int>() : 0;
    };
    auto text = [&body](const char* key) { return to_qstring(body.value(key, std::string())); };
    if (stage == "trial") {
        const bool culprit = body.contains("rank") && body["rank"].is_number_integer();
        return tr("[trial %1/%2] %3%4 (%5 s)")
            .arg(number("trial") + 1)
            .arg(number("trials"))
            .arg(text("status"), culprit ? tr(" on rank %1").arg(number("rank")) : QString(), seconds);
    }
    if (stage == "perf_block") { // launch numbers are from 1 in the event
        return tr("[perf launch %1/%2] block %3/%4 timed: %5 protocol, %6 (%7 s)")
            .arg(number("launch"))
            .arg(number("launches"))
            .arg(number("block"))
            .arg(number("blocks"))
            .arg(text("protocol"), text("side"), seconds);
    }
    if (stage == "perf_launch") {
        return tr("[perf launch %1/%2] started (%3 s)")
            .arg(number("launch"))
            .arg(number("launches"))
            .arg(seconds);
    }
    if (stage == "waiting") {
        return tr("[still running] rank 0 in phase %1, nothing new for %2 s")
            .arg(text("phase"), QString::number(body.value("quiet_seconds", 0.0), 'f', 0));
    }
    return QString::fromStdString(body.dump()); // a stage this launcher does not know: as pkbw sent it
}

int LauncherView::rank_progress(int rank) const {
    return rank >= 0 && rank < static_cast<int>(bars_.size()) ? bars_[static_cast<std::size_t>(rank)]->value()
                                                              : -1;
}

QString LauncherView::log_text() const {
    return log_->toPlainText();
}
QString LauncherView::status_text() const {
    return status_->text();
}

void LauncherView::append_log(const QString& text, const QColor& color) {
    if (color.isValid()) {
        log_->appendHtml(
            QStringLiteral("<span style='color:%1'>%2</span>").arg(color.name(), text.toHtmlEscaped()));
    } else {
        log_->appendPlainText(text);
    }
}

void LauncherView::read_stdout() {
    stdout_buffer_ += process_->readAllStandardOutput();
    qsizetype newline;
    while ((newline = stdout_buffer_.indexOf('\n')) >= 0) {
        const QByteArray line = stdout_buffer_.left(newline);
        stdout_buffer_.remove(0, newline + 1);
        handle_line(line);
    }
}

void LauncherView::read_stderr() {
    const QString text = QString::fromUtf8(process_->readAllStandardError());
    for (const QString& line : text.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        append_log(line, QColor(0xc0, 0x7a, 0x10));
    }
}

void LauncherView::handle_line(const QByteArray& line) {
    if (line.trimmed().isEmpty()) {
        return;
    }
    try {
        const protocol::Message m =
            protocol::parse_line(std::string_view(line.constData(), line.size()), "pkbw stdout");
        handle_message(m.event, m.body);
    } catch (const std::exception&) {
        // Not a protocol line (a stray print): shown as it is.
        append_log(QString::fromUtf8(line));
    }
}

QProgressBar* LauncherView::bar_for_event(int rank) {
    if (rank < 0) {
        return nullptr;
    }
    ensure_ranks(std::max(rank + 1, static_cast<int>(bars_.size())));
    return bars_[static_cast<std::size_t>(rank)];
}

void LauncherView::show_phase(int rank, const nlohmann::json& body) {
    if (QProgressBar* b = bar_for_event(rank)) {
        const std::string phase_name = body["phase"].get<std::string>();
        const QString phase = to_qstring(phase_name);
        const QString& verdict = verdicts_[static_cast<std::size_t>(rank)];
        const QString suffix = verdict.isEmpty() ? QString() : QStringLiteral(" · ") + verdict;
        const QColor color = verdict.isEmpty() ? QColor() : QColor(0xc0, 0x30, 0x30);
        if (phase_name == status::kPhasePerf) {
            // Busy until the first perf_progress (PKB's Python ranks send none): never a stuck 100%.
            b->setRange(0, 0);
            set_bar(rank, tr("perf · timing…") + suffix, color);
        } else {
            b->setRange(0, 100);
            const bool per_trial =
                phase_name == status::kPhaseInputs || phase_name == status::kPhaseReference ||
                phase_name == status::kPhaseCandidate || phase_name == status::kPhaseCompare;
            set_bar(rank,
                    (per_trial ? tr("trial %1/%2 · %3")
                                     .arg(body["trial"].get<int>() + 1)
                                     .arg(trials_expected_)
                                     .arg(phase)
                               : phase) +
                        suffix + QStringLiteral(" · %p%"),
                    color);
        }
    }
}

void LauncherView::show_rank_result(int rank, const nlohmann::json& body, const QString& text) {
    QProgressBar* b = bar_for_event(rank);
    if (b == nullptr) {
        return; // a result without a rank: nothing to show it on
    }
    const std::string status = body["status"].get<std::string>();
    int& done = trials_done_[static_cast<std::size_t>(rank)];
    done = std::max(done, body["trial"].get<int>() + 1);
    b->setRange(0, 100);
    b->setValue(std::min(100, 100 * done / std::max(1, trials_expected_)));
    if (status != status::kPass && verdicts_[static_cast<std::size_t>(rank)].isEmpty()) {
        // The trial as the grid and pkbw's messages number it (from 0); the progress "trial k/N"
        // counts trials done.
        verdicts_[static_cast<std::size_t>(rank)] =
            tr("%1 in trial %2").arg(to_qstring(status)).arg(body["trial"].get<int>());
    }
    set_bar(rank,
            verdicts_[static_cast<std::size_t>(rank)].isEmpty()
                ? tr("trial %1/%2 · pass · %p%").arg(done).arg(trials_expected_)
                : verdicts_[static_cast<std::size_t>(rank)] + QStringLiteral(" · %p%"),
            verdicts_[static_cast<std::size_t>(rank)].isEmpty() ? QColor(0x2e, 0x8b, 0x57)
                                                                : QColor(0xc0, 0x30, 0x30));
    if (status != status::kPass) {
        append_log(tr("rank %1 trial %2: %3 %4")
                       .arg(rank)
                       .arg(body["trial"].get<int>())
                       .arg(to_qstring(status), text),
                   QColor(0xdc, 0x4a, 0x38));
    }
}

void LauncherView::show_run_finished(const nlohmann::json& body, const QString& text) {
    run_id_ = body["run_id"].get<qint64>();
    final_status_ = to_qstring(body["status"].get<std::string>());
    const QString queued = queue_.isEmpty() ? QString() : tr(" (%1 more queued)").arg(queue_.size());
    status_->setText(run_id_ > 0 ? tr("Run %1 finished: %2 (exit %3) %4%5")
                                       .arg(run_id_)
                                       .arg(final_status_)
                                       .arg(body["exit_code"].get<int>())
                                       .arg(text, queued)
                                 : tr("pkbw refused the run: %1 (exit %2) %3%4")
                                       .arg(final_status_)
                                       .arg(body["exit_code"].get<int>())
                                       .arg(text, queued));
    for (int r = 0; r < static_cast<int>(bars_.size()); ++r) {
        QProgressBar* b = bars_[static_cast<std::size_t>(r)];
        if (final_status_ == to_qstring(to_string(RunStatus::Interrupted))) {
            set_bar(r, interrupted_text(r), QColor(0x90, 0x90, 0x90));
        } else if (b->maximum() == 0 || b->format() == tr("waiting")) {
            b->setRange(0, 100);
            set_bar(r, run_id_ > 0 ? final_status_ : tr("not started"),
                    final_status_ == to_qstring(status::kPass) ? QColor(0x2e, 0x8b, 0x57)
                                                               : QColor(0x90, 0x90, 0x90));
        }
    }
    if (run_id_ > 0) {
        open_run_id_ = run_id_;
        open_run_->setText(tr("Open run %1").arg(run_id_));
        open_run_->setVisible(true);
    }
    emit run_finished(run_id_);
}

// The perf phase's own progress (native ranks): block k of N timed on this rank.
void LauncherView::show_perf_progress(int rank, const nlohmann::json& body) {
    if (QProgressBar* b = bar_for_event(rank)) {
        const int blocks = std::max(body["blocks"].get<int>(), 1);
        const int block = std::clamp(body["block"].get<int>(), 0, blocks);
        b->setRange(0, blocks);
        b->setValue(block);
        set_bar(rank,
                tr("perf · block %1/%2 (%3 %4)")
                    .arg(block)
                    .arg(blocks)
                    .arg(to_qstring(body.value("side", std::string())),
                         to_qstring(body.value("protocol", std::string()))),
                block == blocks ? QColor(0x2e, 0x8b, 0x57) : QColor());
    }
}

void LauncherView::handle_message(const std::string& event, const nlohmann::json& body) {
    const int rank = body.contains("rank") && body["rank"].is_number_integer() ? body["rank"].get<int>() : -1;
    auto bar = [&] { return bar_for_event(rank); };
    const QString text = to_qstring(body.value("message", std::string()));
    if (event == protocol::kRunStarted) {
        run_id_ = body["run_id"].get<qint64>();
        if (body.contains("world_size") && body["world_size"].is_number_integer()) {
            ensure_ranks(body["world_size"].get<int>());
        }
        status_->setText(tr("Run %1 started.").arg(run_id_));
        emit run_started(run_id_);
    } else if (event == protocol::kCompile) {
        append_log(tr("compile %1: %2")
                       .arg(to_qstring(body["side"].get<std::string>()),
                            to_qstring(body["status"].get<std::string>())));
        if (!text.isEmpty()) {
            append_log(text, QColor(0xc0, 0x7a, 0x10));
        }
    } else if (event == protocol::kPhase) {
        show_phase(rank, body);
    } else if (event == protocol::kRankResult) {
        show_rank_result(rank, body, text);
    } else if (event == protocol::kRankDone) {
        if (QProgressBar* b = bar()) {
            b->setRange(0, 100);
            b->setValue(100);
            const QString& verdict = verdicts_[static_cast<std::size_t>(rank)];
            set_bar(rank, verdict.isEmpty() ? tr("done · pass") : tr("done · %1").arg(verdict),
                    verdict.isEmpty() ? QColor(0x2e, 0x8b, 0x57) : QColor(0xc0, 0x30, 0x30));
        }
    } else if (event == protocol::kRankExit) {
        if (QProgressBar* b = bar(); b && b->value() < 100) {
            b->setRange(0, 100);
            set_bar(rank, tr("exited · %p%"), QColor(0xc0, 0x30, 0x30));
        }
    } else if (event == protocol::kLog) {
        append_log(QStringLiteral("[rank %1] ").arg(rank) + to_qstring(body["text"].get<std::string>()));
    } else if (event == protocol::kError) {
        append_log(tr("error (%1)%2: %3")
                       .arg(to_qstring(body["kind"].get<std::string>()))
                       .arg(rank >= 0 ? tr(" on rank %1").arg(rank) : QString())
                       .arg(text),
                   QColor(0xdc, 0x4a, 0x38));
    } else if (event == protocol::kRunFinished) {
        show_run_finished(body, text);
    } else if (event == protocol::kPerfProgress) {
        show_perf_progress(rank, body);
    } else if (event == protocol::kPerfResult) {
        append_log(tr("rank %1: timing samples received").arg(rank));
        // Ranks that report no progress inside perf (PKB's Python ranks): the first samples end
        // the busy bar. Native ranks' bars follow perf_progress instead.
        if (QProgressBar* b = bar(); b != nullptr && b->maximum() == 0) {
            b->setRange(0, 100);
            b->setValue(100);
            set_bar(rank, tr("perf · samples received"), QColor(0x2e, 0x8b, 0x57));
        }
    } else if (event == protocol::kCandidate) {
        // The candidate process's own reports: its sandbox when it starts, leftovers when it ends.
        if (body.contains("sandbox") && body["sandbox"].is_string()) {
            append_log(tr("rank %1: candidate sandboxed: %2")
                           .arg(rank)
                           .arg(to_qstring(body["sandbox"].get<std::string>())));
        } else {
            append_log(
                tr("rank %1: candidate %2").arg(rank).arg(to_qstring(body.value("stage", std::string("?")))));
        }
    } else if (event == protocol::kProgress) {
        append_log(progress_text(body)); // pkbw's own progress of the run (docs/cli.md, "--json")
    } else if (event == protocol::kHello) {
        append_log(
            tr("rank %1: started on %2").arg(rank).arg(to_qstring(body.value("device", std::string("?")))));
    } else {
        append_log(QString::fromStdString(body.dump()));
    }
}

} // namespace pkbw::app
