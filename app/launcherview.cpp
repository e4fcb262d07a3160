#include "launcherview.h"

#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"
#include "problemcatalog.h"
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
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>

namespace pkbw::app {
namespace {

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

LauncherView::LauncherView(QWidget* parent, ProblemCatalogLoader* problems)
    : QWidget(parent) {
    auto* layout = new QHBoxLayout(this);
    auto* form_box = new QGroupBox(tr("Run"), this);
    auto* form = new QFormLayout(form_box);
    add_run_fields(form, form_box);
    add_option_fields(form, form_box);
    layout->addWidget(form_box, 0);
    layout->addLayout(build_progress_side(), 1);
    watch_problem_list(problems);
    restore_form();
    connect_form_and_process();
}

// What runs: pkbw, the problem(s), the candidate, the mode, ranks, dtype and trials.
void LauncherView::add_run_fields(QFormLayout* form, QGroupBox* form_box) {
    exe_ = new QLineEdit(default_pkbw_executable(), form_box);
    form->addRow(tr("pkbw"), with_browse(exe_, form_box, false));
    problem_ = new QComboBox(form_box);
    problem_->setEditable(true);
    problem_->setObjectName(QStringLiteral("launchProblem"));
    problem_->setToolTip(tr("A number (2), a stem (2_allgather), or several separated by commas (run one "
                            "after the other)"));
    form->addRow(tr("Problem(s)"), problem_);
    solution_ = new QLineEdit(form_box);
    solution_->setPlaceholderText(tr("solution file (.cu / .cpp)"));
    form->addRow(tr("Solution"), with_browse(solution_, form_box, false));
    solutions_dir_ = new QLineEdit(form_box);
    solutions_dir_->setPlaceholderText(tr("or a generation folder solutions_<backend>_…"));
    form->addRow(tr("Generation folder"), with_browse(solutions_dir_, form_box, true));
    mode_ = new QComboBox(form_box);
    mode_->addItems(
        {to_qstring(status::kModeEval), to_qstring(status::kModeDryrun), to_qstring(status::kModePerf)});
    form->addRow(tr("Mode"), mode_);
    ranks_ = new QSpinBox(form_box);
    ranks_->setRange(1, 64);
    ranks_->setValue(2);
    form->addRow(tr("Ranks"), ranks_);
    dtype_ = new QComboBox(form_box);
    dtype_->setObjectName(QStringLiteral("launchDtype"));
    dtype_->addItems(
        {QStringLiteral("bf16"), QStringLiteral("f16"), QStringLiteral("f32"), QStringLiteral("f64")});
    form->addRow(tr("dtype"), dtype_);
    trials_ = new QSpinBox(form_box);
    trials_->setRange(1, 1000);
    trials_->setValue(5);
    form->addRow(tr("Trials"), trials_);
}

// How it runs: tolerances, backend, sizes, a PKB checkout, trace and outputs, perf's settings, and the
// Start and Cancel buttons.
void LauncherView::add_option_fields(QFormLayout* form, QGroupBox* form_box) {
    atol_ = new QDoubleSpinBox(form_box);
    rtol_ = new QDoubleSpinBox(form_box);
    for (QDoubleSpinBox* box : {atol_, rtol_}) {
        box->setDecimals(6);
        box->setRange(0, 1e3);
        box->setValue(pkbw::kPkbTolerance);
        box->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
    }
    form->addRow(tr("atol"), atol_);
    form->addRow(tr("rtol"), rtol_);
    backend_ = new QComboBox(form_box);
    backend_->addItems({QStringLiteral("cuda"), QStringLiteral("host")});
    // cuda only where a GPU is visible; the host backend runs anywhere.
    backend_->setCurrentText(QFileInfo::exists(QStringLiteral("/dev/nvidiactl")) ? QStringLiteral("cuda")
                                                                                 : QStringLiteral("host"));
    backend_->setObjectName(QStringLiteral("launchBackend"));
    form->addRow(tr("Backend"), backend_);
    m_ = new QSpinBox(form_box);
    n_ = new QSpinBox(form_box);
    m_->setObjectName(QStringLiteral("launchM"));
    n_->setObjectName(QStringLiteral("launchN"));
    for (QSpinBox* box : {m_, n_}) {
        box->setRange(0, 1 << 20);
        box->setSpecialValueText(tr("problem default"));
    }
    form->addRow(tr("Size M (--m)"), m_);
    form->addRow(tr("Size N (--n)"), n_);
    pkb_checkout_ = new QLineEdit(form_box);
    pkb_checkout_->setObjectName(QStringLiteral("launchPkbCheckout"));
    pkb_checkout_->setPlaceholderText(tr("PKB checkout, for PKB's Python solutions (--pkb-checkout)"));
    form->addRow(tr("PKB checkout"), with_browse(pkb_checkout_, form_box, true));
    trace_ = new QCheckBox(tr("capture a trace"), form_box);
    form->addRow(tr("Trace"), trace_);
    all_trials_ = new QCheckBox(tr("run every trial (--all-trials)"), form_box);
    all_trials_->setObjectName(QStringLiteral("launchAllTrials"));
    form->addRow(tr("Trials"), all_trials_);
    keep_outputs_ = new QCheckBox(tr("keep every trial's outputs (--keep-outputs)"), form_box);
    keep_outputs_->setObjectName(QStringLiteral("launchKeepOutputs"));
    form->addRow(tr("Outputs"), keep_outputs_);
    add_perf_fields(form, form_box);
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
}

// The right side: the status line with "Open run N", a bar per rank, the log.
QVBoxLayout* LauncherView::build_progress_side() {
    auto* right = new QVBoxLayout;
    auto* status_row = new QHBoxLayout;
    status_ = new QLabel(tr("Idle."), this);
    status_->setObjectName(QStringLiteral("launchStatus"));
    status_->setWordWrap(true);
    status_row->addWidget(status_, 1);
    // A finished run stays here with its log; this button opens it (the window no longer jumps away).
    open_run_ = new QPushButton(this);
    open_run_->setObjectName(QStringLiteral("launchOpenRun"));
    open_run_->setVisible(false);
    connect(open_run_, &QPushButton::clicked, this, [this] { emit open_run_requested(open_run_id_); });
    status_row->addWidget(open_run_);
    right->addLayout(status_row);
    auto* progress_box = new QGroupBox(tr("Ranks"), this);
    progress_layout_ = new QGridLayout(progress_box);
    right->addWidget(progress_box);
    log_ = new QPlainTextEdit(this);
    log_->setObjectName(QStringLiteral("launchLog"));
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(20000);
    log_->setFont(QFont(QStringLiteral("monospace")));
    right->addWidget(log_, 1);
    return right;
}

// pkbw's problem list, from its child process: the form is usable at once, and checked (or a start
// waits) once the list is here.
void LauncherView::watch_problem_list(ProblemCatalogLoader* problems) {
    ProblemCatalogLoader& source = problems != nullptr ? *problems : problem_catalog_loader();
    problems_source_ = source.source();
    if (source.ready()) {
        apply_problem_list(source.catalog());
    } else {
        problems_loading_ = true;
        connect(&source, &ProblemCatalogLoader::loaded, this, [this, &source] {
            if (problems_loading_) { // else set_problem_list gave the list
                apply_problem_list(source.catalog());
            }
        });
        source.start();
    }
}

void LauncherView::connect_form_and_process() {
    // The user's backend brings the dtype its samples are written for (the host samples are f32:
    // bf16 on the host backend ends every sample in "only f32").
    connect(backend_, &QComboBox::activated, this, [this] { pick_sample_dtype(); });
    connect(dtype_, &QComboBox::activated, this, [this] { dtype_chosen_ = true; });
    // A generation folder's name gives its dtype (solutions_host_f32_…): its files are written for it.
    connect(solutions_dir_, &QLineEdit::textChanged, this, [this] { follow_generation_dtype(); });
    connect(solution_, &QLineEdit::textChanged, this, [this] { follow_generation_dtype(); });
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
    connect(process_, &QProcess::finished, this, &LauncherView::process_finished);
}

// pkbw ended: the rest of its output is read; without a result, the bars say why; a comma list goes on
// with its next problem unless the user cancelled.
void LauncherView::process_finished(int exit_code, QProcess::ExitStatus exit_status) {
    read_stdout();
    if (!stdout_buffer_.isEmpty()) {
        handle_line(stdout_buffer_);
        stdout_buffer_.clear();
    }
    if (final_status_.isEmpty()) {
        status_->setText(exit_status == QProcess::CrashExit
                             ? tr("pkbw crashed.")
                             : tr("pkbw exited with code %1 without a result.").arg(exit_code));
        for (int r = 0; r < static_cast<int>(bars_.size()); ++r) {
            if (!cancelled_ && bars_[static_cast<std::size_t>(r)]->maximum() == 0) {
                bars_[static_cast<std::size_t>(r)]->setRange(0, 1); // no busy bar after the end
            }
            set_bar(r, cancelled_ ? interrupted_text(r) : tr("no result"), QColor(0x90, 0x90, 0x90));
        }
    }
    emit process_ended(exit_status == QProcess::CrashExit ? -1 : exit_code);
    if (!cancelled_ && !queue_.isEmpty()) {
        start_next();
        return;
    }
    queue_.clear();
    start_->setEnabled(true);
    cancel_->setEnabled(false);
}

void LauncherView::set_problem_list(const QStringList& stems, const QString& error) {
    problems_loading_ = false;
    known_problems_ = stems;
    problem_list_error_ = error;
}

void LauncherView::apply_problem_list(const ProblemCatalog& catalog) {
    problems_loading_ = false;
    known_problems_ = catalog.stems();
    problem_list_error_ = catalog.error;
    if (const QString root = catalog.problems_root(); !root.isEmpty()) {
        set_samples_root(QDir(root).filePath(QStringLiteral("../samples"))); // <data>/samples
    }
    // The choices arrive under whatever was typed or restored meanwhile; an empty field takes the
    // first problem, as a form built with the list would.
    const QString typed = problem_->currentText();
    problem_->addItems(known_problems_);
    if (!typed.isEmpty()) {
        problem_->setCurrentText(typed);
    }
    if (start_pending_) {
        start_pending_ = false;
        start();
    }
}

QStringList LauncherView::problems() const {
    QStringList out;
    for (const QString& p : problem_->currentText().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        if (!p.trimmed().isEmpty()) {
            out << p.trimmed();
        }
    }
    return out;
}

QString LauncherView::validate() const {
    const QStringList list = problems();
    const bool pkb = !pkb_checkout_->text().trimmed().isEmpty();
    if (list.isEmpty() && solutions_dir_->text().trimmed().isEmpty()) {
        return tr("Give a problem (a number, a stem, or a comma list).");
    }
    if (!pkb && problems_loading_) {
        return tr("pkbw's problem list is still loading (%1).").arg(problems_source_);
    }
    // Without a PKB checkout the problems are pkbw's: each must be one of them (by number or stem).
    // With no list to check against, the run is refused with the reason rather than unchecked.
    if (!pkb && known_problems_.isEmpty()) {
        return tr("Cannot check the problem names: %1")
            .arg(problem_list_error_.isEmpty() ? tr("pkbw listed no problems") : problem_list_error_);
    }
    if (!pkb) {
        for (const QString& p : list) {
            const bool known =
                std::any_of(known_problems_.begin(), known_problems_.end(), [&](const QString& k) {
                    return k == p || k.section(QLatin1Char('_'), 0, 0) == p;
                });
            if (!known) {
                return tr("Unknown problem '%1' (known: %2).")
                    .arg(p, known_problems_.join(QStringLiteral(", ")));
            }
        }
    }
    const QString solution = solution_->text().trimmed(), dir = solutions_dir_->text().trimmed();
    if (!solution.isEmpty() && !dir.isEmpty()) {
        return tr("Give a solution file or a generation folder, not both.");
    }
    if (solution.isEmpty() && dir.isEmpty() && !pkb) {
        return tr("Give a solution file or a generation folder.");
    }
    if (!solution.isEmpty() && !QFileInfo(solution).isFile()) {
        return tr("The solution file %1 does not exist.").arg(solution);
    }
    if (!dir.isEmpty() && !QFileInfo(dir).isDir()) {
        return tr("The generation folder %1 does not exist.").arg(dir);
    }
    if (pkb && !QFileInfo(pkb_checkout_->text().trimmed()).isDir()) {
        return tr("The PKB checkout %1 is not a folder.").arg(pkb_checkout_->text().trimmed());
    }
    if (!QFileInfo(executable()).isExecutable() && QStandardPaths::findExecutable(executable()).isEmpty()) {
        return tr("pkbw not found at %1.").arg(executable());
    }
    return {};
}

QString LauncherView::solution_name_for_folder() const {
    const QString folder = QDir::cleanPath(solutions_dir_->text().trimmed());
    const GenerationLabel label = parse_generation_label(QFileInfo(folder).fileName().toStdString());
    if (!label.backend.empty()) {
        return to_qstring(label.backend);
    }
    return backend_->currentText();
}

QStringList LauncherView::arguments() const {
    const QStringList list = problems();
    return arguments_for(list.isEmpty() ? QString() : list.first());
}

QStringList LauncherView::arguments_for(const QString& problem) const {
    const QString mode = mode_->currentText();
    QStringList args{mode};
    if (!problem.isEmpty()) {
        args << QStringLiteral("--problem") << problem;
    }
    if (!solution_->text().trimmed().isEmpty()) {
        args << QStringLiteral("--solution") << solution_->text().trimmed();
    }
    if (!solutions_dir_->text().trimmed().isEmpty()) {
        // A folder alone names no file: pkbw needs --solution NAME with it, the NAME of the folder's
        // files (<n>_<problem>_<NAME>.cu): the backend its name gives (solutions_<backend>_…), else
        // the form's backend.
        if (solution_->text().trimmed().isEmpty()) {
            args << QStringLiteral("--solution") << solution_name_for_folder();
        }
        args << QStringLiteral("--solutions-dir") << solutions_dir_->text().trimmed();
    }
    args << QStringLiteral("--nproc") << QString::number(ranks_->value()) << QStringLiteral("--dtype")
         << dtype_->currentText() << QStringLiteral("--backend") << backend_->currentText();
    // Trials and tolerances exist for eval and perf only (a dryrun runs one side once).
    if (mode != to_qstring(status::kModeDryrun)) {
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
    if (m_->value() > 0) {
        args << QStringLiteral("--m") << QString::number(m_->value());
    }
    if (n_->value() > 0) {
        args << QStringLiteral("--n") << QString::number(n_->value());
    }
    if (!pkb_checkout_->text().trimmed().isEmpty()) {
        args << QStringLiteral("--pkb-checkout") << pkb_checkout_->text().trimmed();
    }
    if (all_trials_->isChecked() && mode != to_qstring(status::kModeDryrun)) {
        args << QStringLiteral("--all-trials");
    }
    if (keep_outputs_->isChecked()) {
        args << QStringLiteral("--keep-outputs");
    }
    if (mode == to_qstring(status::kModePerf)) {
        args << perf_arguments();
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
    // The names are checked against pkbw's list: until it arrives the start waits for it.
    if (problems_loading_ && pkb_checkout_->text().trimmed().isEmpty()) {
        start_pending_ = true;
        status_->setText(tr("Waiting for pkbw's problem list (%1) to check the form…").arg(problems_source_));
        return;
    }
    // Checked here, before pkbw starts: a refused form shows why and starts nothing.
    if (const QString problem = validate(); !problem.isEmpty()) {
        status_->setText(tr("Not started: %1").arg(problem));
        return;
    }
    save_form();
    cancelled_ = false;
    queue_ = problems();
    if (queue_.isEmpty()) {
        queue_ << QString(); // a generation folder alone: pkbw runs its problems
    }
    log_->clear();
    open_run_->setVisible(false);
    start_next();
}

void LauncherView::start_next() {
    const QString problem = queue_.takeFirst();
    run_id_ = 0;
    final_status_.clear();
    stdout_buffer_.clear();
    trials_expected_ = status::trials_in_mode(mode_->currentText().toStdString(), trials_->value());
    ensure_ranks(ranks_->value());
    trials_done_.assign(static_cast<std::size_t>(ranks_->value()), 0);
    verdicts_.assign(bars_.size(), QString());
    for (int r = 0; r < static_cast<int>(bars_.size()); ++r) {
        bars_[static_cast<std::size_t>(r)]->setRange(0, 100);
        bars_[static_cast<std::size_t>(r)]->setValue(0);
        set_bar(r, tr("waiting"));
    }
    const QStringList args = arguments_for(problem);
    append_log(QStringLiteral("$ ") + executable() + QLatin1Char(' ') + args.join(QLatin1Char(' ')));
    status_->setText(tr("Starting…"));
    start_->setEnabled(false);
    cancel_->setEnabled(true);
    process_->start(executable(), args);
}

void LauncherView::cancel() {
    if (start_pending_) { // nothing started yet: the start waiting for the list is dropped
        start_pending_ = false;
        status_->setText(tr("Not started: cancelled while pkbw's problem list was loading."));
        return;
    }
    if (!running()) {
        return;
    }
    status_->setText(tr("Cancelling: pkbw stops its ranks and marks the run interrupted…"));
    cancelled_ = true;
    queue_.clear();
    process_->terminate();
    // A launcher that ignores SIGTERM for 10 s is killed; its ranks die with their process group.
    QTimer::singleShot(10000, process_, [p = process_] {
        if (p->state() != QProcess::NotRunning) {
            p->kill();
        }
    });
}

} // namespace pkbw::app
