#include "problembrowser.h"

#include "cudahighlighter.h"
#include "theme.h"

#include <QDir>
#include <QFile>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTabWidget>
#include <QTextBrowser>
#include <algorithm>

namespace pkbw::app {

QStringList problem_stems(const QString& root) {
    QStringList stems;
    for (const QString& stem : QDir(root).entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        if (!stem.isEmpty() && stem.front().isDigit()) {
            stems << stem;
        }
    }
    auto number = [](const QString& stem) { return stem.section(QLatin1Char('_'), 0, 0).toInt(); };
    std::stable_sort(stems.begin(), stems.end(),
                     [&](const QString& a, const QString& b) { return number(a) < number(b); });
    return stems;
}
namespace {

QString read_file(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll())
                                       : QObject::tr("(%1 not found)").arg(path);
}

QPlainTextEdit* make_source(QWidget* parent) {
    auto* e = new QPlainTextEdit(parent);
    e->setReadOnly(true);
    e->setLineWrapMode(QPlainTextEdit::NoWrap);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::TypeWriter);
    e->setFont(mono);
    new CudaHighlighter(e->document(), current_theme() == Theme::Dark);
    return e;
}

} // namespace

ProblemBrowser::ProblemBrowser(QWidget* parent, const QString& root)
    : QWidget(parent)
    , root_(root.isEmpty() ? QStringLiteral(PKBW_SOURCE_ROOT "/problems") : root) {
    auto* layout = new QHBoxLayout(this);
    auto* split = new QSplitter(Qt::Horizontal, this);
    list_ = new QListWidget(split);
    list_->setObjectName(QStringLiteral("problemList"));
    tabs_ = new QTabWidget(split);
    description_ = new QTextBrowser(tabs_);
    spec_ = make_source(tabs_);
    reference_ = make_source(tabs_);
    host_reference_ = make_source(tabs_);
    tabs_->addTab(description_, tr("Description"));
    tabs_->addTab(spec_, tr("Spec (problem.cpp)"));
    tabs_->addTab(reference_, tr("Reference (reference.cu)"));
    tabs_->addTab(host_reference_, tr("Host reference"));
    split->addWidget(list_);
    split->addWidget(tabs_);
    split->setStretchFactor(1, 4);
    layout->addWidget(split);
    list_->addItems(problem_stems(root_));
    connect(list_, &QListWidget::currentTextChanged, this, &ProblemBrowser::select);
    if (list_->count() > 0) {
        list_->setCurrentRow(0);
    } else {
        description_->setPlainText(tr("No problems found under %1.").arg(root_));
    }
}

QStringList ProblemBrowser::problems() const {
    QStringList out;
    for (int i = 0; i < list_->count(); ++i) {
        out << list_->item(i)->text();
    }
    return out;
}

void ProblemBrowser::select(const QString& stem) {
    if (stem.isEmpty()) {
        return;
    }
    const QString folder = root_ + QLatin1Char('/') + stem;
    description_->setMarkdown(read_file(folder + QStringLiteral("/README.md")));
    spec_->setPlainText(read_file(folder + QStringLiteral("/problem.cpp")));
    reference_->setPlainText(read_file(folder + QStringLiteral("/reference.cu")));
    host_reference_->setPlainText(read_file(folder + QStringLiteral("/reference_host.cpp")));
    const auto items = list_->findItems(stem, Qt::MatchExactly);
    if (!items.isEmpty() && list_->currentItem() != items.front()) {
        list_->setCurrentItem(items.front());
    }
}

QString ProblemBrowser::description() const {
    return description_->toPlainText();
}
QString ProblemBrowser::reference_source() const {
    return reference_->toPlainText();
}

} // namespace pkbw::app
