// The launcher's form beyond its first fields: perf's protocol options (--no-pkb, --warmup, --pairs,
// --iters, --launches; each left to pkbw while at "pkbw default"), the dtype each backend's sample
// generations are written for, and the form remembered between sessions.
#include "launcherview.h"
#include "pkbw/core/generation.h"
#include "qtconvert.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>

namespace pkbw::app {

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

void LauncherView::set_pkb_checkout(const QString& dir) {
    pkb_checkout_->setText(dir);
}
void LauncherView::add_perf_fields(QFormLayout* form, QWidget* box) {
    no_pkb_ = new QCheckBox(tr("skip PKB's protocol (--no-pkb)"), box);
    no_pkb_->setObjectName(QStringLiteral("launchNoPkb"));
    no_pkb_->setToolTip(tr("PKB's protocol times 500 warm-up and 100 timed calls per side after pkbw's "
                           "blocks; its speedup is shown beside pkbw's"));
    form->addRow(tr("PKB timing"), no_pkb_);
    struct Field {
        QSpinBox** box;
        const char* name;
        const char* label;
        const char* tip;
        int max;
    };
    const Field fields[] = {
        {&warmup_, "launchWarmup", "Warm-up calls (--warmup)", "pkbw's warm-up calls per side (pkbw: 50)",
         100000},
        {&pairs_, "launchPairs", "Block pairs (--pairs)", "ABBA block pairs per launch (pkbw: 5)", 1000},
        {&iters_, "launchIters", "Calls per block (--iters)",
         "calls per block, each on fresh inputs and checked (pkbw: 50, raised until a block's inputs "
         "span 3x L2)",
         100000},
        {&launches_, "launchLaunches", "Launches (--launches)",
         "independent launches, fresh processes each; the interval is over them (pkbw: 3)", 100},
    };
    for (const Field& f : fields) {
        auto* spin = new QSpinBox(box);
        spin->setObjectName(QLatin1String(f.name));
        spin->setRange(0, f.max);
        spin->setSpecialValueText(tr("pkbw default"));
        spin->setToolTip(tr(f.tip));
        form->addRow(tr(f.label), spin);
        *f.box = spin;
    }
    // Perf's options mean nothing to eval and dryrun: greyed there.
    auto follow_mode = [this] {
        const bool perf = mode_->currentText() == QLatin1String("perf");
        for (QWidget* w : std::initializer_list<QWidget*>{no_pkb_, warmup_, pairs_, iters_, launches_}) {
            w->setEnabled(perf);
        }
    };
    connect(mode_, &QComboBox::currentTextChanged, this, follow_mode);
    follow_mode();
}

QStringList LauncherView::perf_arguments() const {
    QStringList args;
    if (no_pkb_->isChecked()) {
        args << QStringLiteral("--no-pkb");
    }
    const std::pair<const QSpinBox*, const char*> options[] = {
        {warmup_, "--warmup"}, {pairs_, "--pairs"}, {iters_, "--iters"}, {launches_, "--launches"}};
    for (const auto& [spin, flag] : options) {
        if (spin->value() > 0) {
            args << QLatin1String(flag) << QString::number(spin->value());
        }
    }
    return args;
}

void LauncherView::set_samples_root(const QString& dir) {
    samples_root_ = dir;
    if (!dtype_chosen_) {
        pick_sample_dtype();
    }
}

QString LauncherView::sample_dtype(const QString& backend) const {
    // The first generation of the backend in name order whose name gives its precision.
    const QStringList folders =
        QDir(samples_root_)
            .entryList({QStringLiteral("solutions_%1_*").arg(backend)}, QDir::Dirs, QDir::Name);
    for (const QString& folder : folders) {
        const GenerationLabel label = parse_generation_label(to_std(folder));
        if (!label.precision.empty() && dtype_->findText(to_qstring(label.precision)) >= 0) {
            return to_qstring(label.precision);
        }
    }
    return {};
}

void LauncherView::pick_sample_dtype() {
    const QString dtype = sample_dtype(backend_->currentText());
    if (!dtype.isEmpty()) {
        dtype_->setCurrentText(dtype);
        dtype_->setToolTip(
            tr("%1: the dtype the %2 backend's samples are written for").arg(dtype, backend_->currentText()));
    }
}

void LauncherView::follow_generation_dtype() {
    // The folder, else the solution file's own folder when it is a generation's.
    for (const QString& path : {solutions_dir_->text().trimmed(), solution_->text().trimmed()}) {
        const GenerationLabel label = parse_generation_label(to_std(QDir::cleanPath(path)));
        if (!path.isEmpty() && !label.precision.empty() &&
            dtype_->findText(to_qstring(label.precision)) >= 0) {
            dtype_->setCurrentText(to_qstring(label.precision));
            dtype_->setToolTip(tr("%1: the dtype of the generation folder %2")
                                   .arg(to_qstring(label.precision), to_qstring(label.label)));
            return;
        }
    }
}

QString LauncherView::dtype() const {
    return dtype_->currentText();
}

void LauncherView::save_form() const {
    QSettings s;
    s.beginGroup(QStringLiteral("launcher"));
    s.setValue(QStringLiteral("pkbw"), exe_->text());
    s.setValue(QStringLiteral("problem"), problem_->currentText());
    s.setValue(QStringLiteral("solution"), solution_->text());
    s.setValue(QStringLiteral("solutions_dir"), solutions_dir_->text());
    s.setValue(QStringLiteral("mode"), mode_->currentText());
    s.setValue(QStringLiteral("ranks"), ranks_->value());
    s.setValue(QStringLiteral("dtype"), dtype_->currentText());
    s.setValue(QStringLiteral("trials"), trials_->value());
    s.setValue(QStringLiteral("atol"), atol_->value());
    s.setValue(QStringLiteral("rtol"), rtol_->value());
    s.setValue(QStringLiteral("backend"), backend_->currentText());
    s.setValue(QStringLiteral("m"), m_->value());
    s.setValue(QStringLiteral("n"), n_->value());
    s.setValue(QStringLiteral("pkb_checkout"), pkb_checkout_->text());
    s.setValue(QStringLiteral("trace"), trace_->isChecked());
    s.setValue(QStringLiteral("all_trials"), all_trials_->isChecked());
    s.setValue(QStringLiteral("keep_outputs"), keep_outputs_->isChecked());
    s.setValue(QStringLiteral("no_pkb"), no_pkb_->isChecked());
    s.setValue(QStringLiteral("warmup"), warmup_->value());
    s.setValue(QStringLiteral("pairs"), pairs_->value());
    s.setValue(QStringLiteral("iters"), iters_->value());
    s.setValue(QStringLiteral("launches"), launches_->value());
    s.endGroup();
}

void LauncherView::restore_form() {
    QSettings s;
    s.beginGroup(QStringLiteral("launcher"));
    if (!s.contains(QStringLiteral("mode"))) {
        return;
    }
    if (QFileInfo(s.value(QStringLiteral("pkbw")).toString()).isExecutable()) {
        exe_->setText(s.value(QStringLiteral("pkbw")).toString());
    }
    problem_->setCurrentText(s.value(QStringLiteral("problem")).toString());
    solution_->setText(s.value(QStringLiteral("solution")).toString());
    solutions_dir_->setText(s.value(QStringLiteral("solutions_dir")).toString());
    mode_->setCurrentText(s.value(QStringLiteral("mode")).toString());
    ranks_->setValue(s.value(QStringLiteral("ranks"), 2).toInt());
    dtype_->setCurrentText(s.value(QStringLiteral("dtype")).toString());
    trials_->setValue(s.value(QStringLiteral("trials"), 5).toInt());
    atol_->setValue(s.value(QStringLiteral("atol"), pkbw::kPkbTolerance).toDouble());
    rtol_->setValue(s.value(QStringLiteral("rtol"), pkbw::kPkbTolerance).toDouble());
    backend_->setCurrentText(s.value(QStringLiteral("backend")).toString());
    m_->setValue(s.value(QStringLiteral("m"), 0).toInt());
    n_->setValue(s.value(QStringLiteral("n"), 0).toInt());
    pkb_checkout_->setText(s.value(QStringLiteral("pkb_checkout")).toString());
    trace_->setChecked(s.value(QStringLiteral("trace")).toBool());
    all_trials_->setChecked(s.value(QStringLiteral("all_trials")).toBool());
    keep_outputs_->setChecked(s.value(QStringLiteral("keep_outputs")).toBool());
    no_pkb_->setChecked(s.value(QStringLiteral("no_pkb")).toBool());
    warmup_->setValue(s.value(QStringLiteral("warmup"), 0).toInt());
    pairs_->setValue(s.value(QStringLiteral("pairs"), 0).toInt());
    iters_->setValue(s.value(QStringLiteral("iters"), 0).toInt());
    launches_->setValue(s.value(QStringLiteral("launches"), 0).toInt());
    dtype_chosen_ = true; // a saved form's dtype is the user's
    s.endGroup();
}

} // namespace pkbw::app
