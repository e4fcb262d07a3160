// The problems shipped with pkbw (folders under problems/): description (README.md), the problem's
// spec (problem.cpp) and its reference sources, highlighted.
#pragma once

#include <QWidget>

class QListWidget;
class QPlainTextEdit;
class QTabWidget;
class QTextBrowser;

namespace pkbw::app {

// The problem folders under `root` (names starting with a digit) in problem-number order: 1_, 2_, ..., 10_.
QStringList problem_stems(const QString& root);

class ProblemBrowser : public QWidget {
    Q_OBJECT
public:
    explicit ProblemBrowser(QWidget* parent = nullptr, const QString& root = {});
    QStringList problems() const;
    void select(const QString& stem);
    QString description() const;
    QString reference_source() const;

private:
    QString root_;
    QListWidget* list_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    QTextBrowser* description_ = nullptr;
    QPlainTextEdit* spec_ = nullptr;
    QPlainTextEdit* reference_ = nullptr;
    QPlainTextEdit* host_reference_ = nullptr;
};

} // namespace pkbw::app
