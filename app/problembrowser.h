// The problems pkbw knows (problemcatalog.h: as `pkbw problems --json` lists them): description
// (README.md), the problem's spec (problem.cpp, in a source tree) and its reference sources,
// highlighted.
#pragma once

#include "problemcatalog.h"

#include <QWidget>

class QListWidget;
class QPlainTextEdit;
class QTabWidget;
class QTextBrowser;

namespace pkbw::app {

class ProblemBrowser : public QWidget {
    Q_OBJECT
public:
    // `catalog` null: the list of `loader` (null: the process's, problem_catalog_loader()), shown
    // when it arrives, "loading" until then.
    explicit ProblemBrowser(QWidget* parent = nullptr, const ProblemCatalog* catalog = nullptr,
                            ProblemCatalogLoader* loader = nullptr);
    void set_catalog(const ProblemCatalog& catalog);
    QStringList problems() const;
    void select(const QString& stem);
    QString description() const;
    QString reference_source() const;

private:
    ProblemCatalog catalog_;
    QListWidget* list_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    QTextBrowser* description_ = nullptr;
    QPlainTextEdit* spec_ = nullptr;
    QPlainTextEdit* reference_ = nullptr;
    QPlainTextEdit* host_reference_ = nullptr;
};

} // namespace pkbw::app
