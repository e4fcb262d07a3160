#include "problembrowser.h"

#include "cudahighlighter.h"
#include "theme.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTabWidget>
#include <QTextBrowser>
#include <algorithm>

namespace pkbw::app {

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

ProblemBrowser::ProblemBrowser(QWidget* parent, const ProblemCatalog* catalog, ProblemCatalogLoader* loader)
    : QWidget(parent) {
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
    connect(list_, &QListWidget::currentTextChanged, this, &ProblemBrowser::select);
    if (catalog != nullptr) {
        set_catalog(*catalog);
        return;
    }
    ProblemCatalogLoader& source = loader != nullptr ? *loader : problem_catalog_loader();
    if (source.ready()) {
        set_catalog(source.catalog());
        return;
    }
    description_->setPlainText(tr("Loading the problem list (%1)…").arg(source.source()));
    connect(&source, &ProblemCatalogLoader::loaded, this, [this, &source] { set_catalog(source.catalog()); });
    source.start();
}

void ProblemBrowser::set_catalog(const ProblemCatalog& catalog) {
    catalog_ = catalog;
    list_->clear();
    list_->addItems(catalog_.stems());
    if (list_->count() > 0) {
        list_->setCurrentRow(0);
    } else {
        description_->setPlainText(
            tr("No problems: %1").arg(catalog_.error.isEmpty() ? catalog_.source : catalog_.error));
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
    const ProblemEntry* entry = catalog_.find(stem);
    if (entry == nullptr) {
        return;
    }
    // A file the data directory does not hold (an installed tree has no problem.cpp) says so.
    auto shown = [this](const QString& path, const QString& name) {
        return path.isEmpty() ? tr("(no %1 in pkbw's data directory)").arg(name) : read_file(path);
    };
    QString readme = shown(entry->readme, QStringLiteral("README.md"));
    if (entry->readme.isEmpty()) {
        readme = QStringLiteral("# %1. %2\n\n%3\n").arg(entry->id).arg(entry->title, entry->description);
    }
    description_->setMarkdown(readme);
    const QString spec = entry->folder.isEmpty() ? QString() : entry->folder + QStringLiteral("/problem.cpp");
    spec_->setPlainText(QFileInfo::exists(spec) ? read_file(spec) : shown({}, QStringLiteral("problem.cpp")));
    reference_->setPlainText(shown(entry->reference_cuda, QStringLiteral("reference.cu")));
    host_reference_->setPlainText(shown(entry->reference_host, QStringLiteral("reference_host.cpp")));
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
