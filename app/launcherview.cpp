#include "launcherview.h"

#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "problembrowser.h"
#include "qtconvert.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTimer>
#include <QVBoxLayout>

namespace pkbw::app {
namespace {

QString default_executable() {
    const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/pkbw");
    if (QFileInfo(beside).isExecutable()) {
        return beside;
    }
    const QString found = QStandardPaths::findExecutable(QStringLiteral("pkbw"));
    return found.isEmpty() ? QStringLiteral("pkbw") : found;
}

QWidget* with_browse(QLineEdit* edit, QWidget* parent, bool directory) {
    auto* box = new QWidget(parent);
    auto* row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(edit, 1);
    auto* button = new QPushButton(QObject::tr("Browse…"), box);
    row->addWidget(button);
    QObject::connect(button, &QPushButton::clicked, edit, [edit, directory] {
        const QString path = directory
                                 ? QFileDialog::getExistingDirectory(edit, QObject::tr("Choose a folder"))
                                 : QFileDialog::getOpenFileName(edit, QObject::tr("Choose a file"));
        if (!path.isEmpty()) {
            edit->setText(path);
        }
    });
    return box;
}

} // namespace

LauncherView::LauncherView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    auto* form_box = new QGroupBox(tr("Run"), this);
    auto* form = new QFormLayout(form_box);
    exe_ = new QLineEdit(default_executable(), form_box);
    form->addRow(tr("pkbw"), with_browse(exe_, form_box, false));
    problem_ = new QComboBox(form_box);
    problem_->setEditable(true);
    problem_->setObjectName(QStringLiteral("launchProblem"));
    problem_->setToolTip(tr("A number (2), a stem (2_allgather), or several separated by commas"));
    problem_->addItems(problem_stems(QStringLiteral(PKBW_SOURCE_ROOT "/problems")));
    form->addRow(tr("Problem(s)"), problem_);
    solution_ = new QLineEdit(form_box);
    solution_->setPlaceholderText(tr("solution file (.cu / .cpp)"));
    form->addRow(tr("Solution"), with_browse(solution_, form_box, false));
    solutions_dir_ = new QLineEdit(form_box);
    solutions_dir_->setPlaceholderText(tr("or a generation folder solutions_<backend>_…"));
    form->addRow(tr("Generation folder"), with_browse(solutions_dir_, form_box, true));
    mode_ = new QComboBox(form_box);
    mode_->addItems({QStringLiteral("eval"), QStringLiteral("dryrun"), QStringLiteral("perf")});
    form->addRow(tr("Mode"), mode_);
    ranks_ = new QSpinBox(form_box);
    ranks_->setRange(1, 64);
    ranks_->setValue(2);
    form->addRow(tr("Ranks"), ranks_);
    dtype_ = new QComboBox(form_box);
    dtype_->addItems({QStringLiteral("bf16"), QStringLiteral("f16"), QStringLiteral("f32")});
    form->addRow(tr("dtype"), dtype_);
    trials_ = new QSpinBox(form_box);
    trials_->setRange(1, 1000);
    trials_->setValue(5);
    form->addRow(tr("Trials"), trials_);
    atol_ = new QDoubleSpinBox(form_box);
    rtol_ = new QDoubleSpinBox(form_box);
    for (QDoubleSpinBox* box : {atol_, rtol_}) {
        box->setDecimals(6);
        box->setRange(0, 1e3);
        box->setValue(1e-2);
        box->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
    }
    form->addRow(tr("atol"), atol_);
    form->addRow(tr("rtol"), rtol_);
    backend_ = new QComboBox(form_box);
    backend_->addItems({QStringLiteral("cuda"), QStringLiteral("host")});
    form->addRow(tr("Backend"), backend_);
    trace_ = new QCheckBox(tr("capture a trace"), form_box);
    form->addRow(tr("Trace"), trace_);
    auto* buttons = new QHBoxLayout;
    start_ = new QPushButton(tr("Start"), form_box);
    start_->setObjectName(QStringLiteral("launchStart"));
    start_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    cancel_ = new QPushButton(tr("Cancel"), form_box);
    cancel_->setObjectName(QStringLiteral("launchCancel"));
    cancel_->setEnabled(false);
    buttons->addWidget(start_);
    buttons->addWidget(cancel_);
    form->addRow(buttons);
    layout->addWidget(form_box, 0);

    auto* right = new QVBoxLayout;
    status_ = new QLabel(tr("Idle."), this);
    status_->setObjectName(QStringLiteral("launchStatus"));
    status_->setWordWrap(true);
    right->addWidget(status_);
    auto* progress_box = new QGroupBox(tr("Ranks"), this);
    progress_layout_ = new QGridLayout(progress_box);
    right->addWidget(progress_box);
    log_ = new QPlainTextEdit(this);
    log_->setObjectName(QStringLiteral("launchLog"));
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(20000);
    log_->setFont(QFont(QStringLiteral("monospace")));
    right->addWidget(log_, 1);
    layout->addLayout(right, 1);

    process_ = new QProcess(this);
    connect(start_, &QPushButton::clicked, this, &LauncherView::start);
    connect(cancel_, &QPushButton::clicked, this, &LauncherView::cancel);
    connect(process_, &QProcess::readyReadStandardOutput, this, &LauncherView::read_stdout);
    connect(process_, &QProcess::readyReadStandardError, this, &LauncherView::read_stderr);
    connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart) {
            status_->setText(tr("Could not start %1: %2").arg(executable(), process_->errorString()));
            start_->setEnabled(true);
            cancel_->setEnabled(false);
            emit process_ended(-1);
        }
    });
    connect(process_, &QProcess::finished, this, [this](int exit_code, QProcess::ExitStatus exit_status) {
        read_stdout();
        if (!stdout_buffer_.isEmpty()) {
            handle_line(stdout_buffer_);
            stdout_buffer_.clear();
        }
        start_->setEnabled(true);
        cancel_->setEnabled(false);
        if (final_status_.isEmpty()) {
            status_->setText(exit_status == QProcess::CrashExit
                                 ? tr("pkbw crashed.")
                                 : tr("pkbw exited with code %1 without a result.").arg(exit_code));
        }
        emit process_ended(exit_status == QProcess::CrashExit ? -1 : exit_code);
    });
}

void LauncherView::set_executable(const QString& path) {
    exe_->setText(path);
}
QString LauncherView::executable() const {
    return exe_->text().trimmed();
}
void LauncherView::set_problem(const QString& problem) {
    problem_->setCurrentText(problem);
}
void LauncherView::set_solution(const QString& file) {
    solution_->setText(file);
}
void LauncherView::set_solutions_dir(const QString& dir) {
    solutions_dir_->setText(dir);
}
void LauncherView::set_mode(const QString& mode) {
    mode_->setCurrentText(mode);
}
void LauncherView::set_ranks(int ranks) {
    ranks_->setValue(ranks);
}
void LauncherView::set_trials(int trials) {
    trials_->setValue(trials);
}
void LauncherView::set_backend(const QString& backend) {
    backend_->setCurrentText(backend);
}

QStringList LauncherView::arguments() const {
    const QString mode = mode_->currentText();
    QStringList args{mode};
    // pkbw takes one problem per run; the first of a comma-separated list is used.
    const QStringList problems = problem_->currentText().split(QLatin1Char(','), Qt::SkipEmptyParts);
    if (!problems.isEmpty()) {
        args << QStringLiteral("--problem") << problems.first().trimmed();
    }
    if (!solution_->text().trimmed().isEmpty()) {
        args << QStringLiteral("--solution") << solution_->text().trimmed();
    }
    if (!solutions_dir_->text().trimmed().isEmpty()) {
        args << QStringLiteral("--solutions-dir") << solutions_dir_->text().trimmed();
    }
    args << QStringLiteral("--nproc") << QString::number(ranks_->value()) << QStringLiteral("--dtype")
         << dtype_->currentText() << QStringLiteral("--backend") << backend_->currentText();
    // Trials and tolerances exist for eval and perf only (a dryrun runs one side once).
    if (mode != QLatin1String("dryrun")) {
        args << QStringLiteral("--trials") << QString::number(trials_->value()) << QStringLiteral("--atol")
             << QString::number(atol_->value(), 'g', 10) << QStringLiteral("--rtol")
             << QString::number(rtol_->value(), 'g', 10);
    }
    if (!store_.isEmpty()) {
        args << QStringLiteral("--store") << store_;
    }
    if (trace_->isChecked()) {
        args << QStringLiteral("--trace");
    }
    args << QStringLiteral("--json");
    return args;
}

bool LauncherView::running() const {
    return process_->state() != QProcess::NotRunning;
}

void LauncherView::start() {
    if (running()) {
        return;
    }
    run_id_ = 0;
    final_status_.clear();
    stdout_buffer_.clear();
    log_->clear();
    trials_expected_ = mode_->currentText() == QLatin1String("dryrun") ? 1 : trials_->value();
    ensure_ranks(ranks_->value());
    trials_done_.assign(static_cast<std::size_t>(ranks_->value()), 0);
    for (QProgressBar* bar : bars_) {
        bar->setValue(0);
        bar->setFormat(tr("waiting"));
    }
    const QStringList args = arguments();
    append_log(QStringLiteral("$ ") + executable() + QLatin1Char(' ') + args.join(QLatin1Char(' ')));
    status_->setText(tr("Starting…"));
    start_->setEnabled(false);
    cancel_->setEnabled(true);
    process_->start(executable(), args);
}

void LauncherView::cancel() {
    if (!running()) {
        return;
    }
    status_->setText(tr("Cancelling: pkbw stops its ranks and marks the run interrupted…"));
    process_->terminate();
    // A launcher that ignores SIGTERM for 10 s is killed; its ranks die with their process group.
    QTimer::singleShot(10000, process_, [p = process_] {
        if (p->state() != QProcess::NotRunning) {
            p->kill();
        }
    });
}

void LauncherView::ensure_ranks(int count) {
    while (static_cast<int>(bars_.size()) < count) {
        const int rank = static_cast<int>(bars_.size());
        auto* bar = new QProgressBar(this);
        bar->setRange(0, 100);
        bar->setValue(0);
        bar->setFormat(tr("waiting"));
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

void LauncherView::handle_message(const std::string& event, const nlohmann::json& body) {
    const int rank = body.contains("rank") && body["rank"].is_number_integer() ? body["rank"].get<int>() : -1;
    auto bar = [&]() -> QProgressBar* {
        if (rank < 0) {
            return nullptr;
        }
        ensure_ranks(std::max(rank + 1, static_cast<int>(bars_.size())));
        return bars_[static_cast<std::size_t>(rank)];
    };
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
        if (QProgressBar* b = bar()) {
            b->setFormat(tr("trial %1 · %2 · %p%")
                             .arg(body["trial"].get<int>())
                             .arg(to_qstring(body["phase"].get<std::string>())));
        }
    } else if (event == protocol::kRankResult) {
        QProgressBar* b = bar();
        const std::string status = body["status"].get<std::string>();
        int& done = trials_done_[static_cast<std::size_t>(rank)];
        done = std::max(done, body["trial"].get<int>() + 1);
        b->setValue(std::min(100, 100 * done / std::max(1, trials_expected_)));
        if (status != "pass") {
            append_log(tr("rank %1 trial %2: %3 %4")
                           .arg(rank)
                           .arg(body["trial"].get<int>())
                           .arg(to_qstring(status), text),
                       QColor(0xdc, 0x4a, 0x38));
        }
    } else if (event == protocol::kRankDone) {
        if (QProgressBar* b = bar()) {
            b->setValue(100);
            b->setFormat(tr("done · %p%"));
        }
    } else if (event == protocol::kRankExit) {
        if (QProgressBar* b = bar(); b && b->value() < 100) {
            b->setFormat(tr("exited · %p%"));
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
        run_id_ = body["run_id"].get<qint64>();
        final_status_ = to_qstring(body["status"].get<std::string>());
        status_->setText(tr("Run %1 finished: %2 (exit %3) %4")
                             .arg(run_id_)
                             .arg(final_status_)
                             .arg(body["exit_code"].get<int>())
                             .arg(text));
        emit run_finished(run_id_);
    } else if (event == protocol::kPerfResult) {
        append_log(tr("rank %1: timing samples received").arg(rank));
    } else {
        append_log(QString::fromStdString(body.dump()));
    }
}

} // namespace pkbw::app
