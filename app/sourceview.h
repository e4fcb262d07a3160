// Reference and candidate sources side by side, highlighted, with a line diff (changed lines
// tinted, counts in the header) and compiler diagnostics annotated on their lines.
#pragma once

#include "rundata.h"

#include <QWidget>
#include <memory>

class QLabel;
class QListWidget;
class QPlainTextEdit;

namespace pkbw::app {

class CudaHighlighter;

struct Diagnostic {
    int line = 0; // 1-based
    int column = 0;
    QString severity; // "error", "warning", "note"
    QString message;
};
// gcc/clang/nvcc diagnostics: "file:line:col: error: text" and nvcc's "file(line): error: text".
QList<Diagnostic> parse_diagnostics(const QString& log);

class SourceView : public QWidget {
    Q_OBJECT
public:
    explicit SourceView(QWidget* parent = nullptr);
    void set_data(std::shared_ptr<const RunData> data);
    // Shows two texts (what set_data does after reading the files); `log` holds compiler output.
    void set_sources(const QString& left_title, const QString& left, const QString& right_title,
                     const QString& right, const QString& log = {});

    QString diff_summary() const;
    int inserted_lines() const { return inserted_; }
    int deleted_lines() const { return deleted_; }
    const QList<Diagnostic>& diagnostics() const { return diagnostics_; }

private:
    QLabel* left_title_ = nullptr;
    QLabel* right_title_ = nullptr;
    QLabel* summary_ = nullptr;
    QPlainTextEdit* left_ = nullptr;
    QPlainTextEdit* right_ = nullptr;
    QListWidget* diagnostics_list_ = nullptr;
    QList<Diagnostic> diagnostics_;
    CudaHighlighter* left_highlighter_ = nullptr;
    CudaHighlighter* right_highlighter_ = nullptr;
    int inserted_ = 0, deleted_ = 0;
};

} // namespace pkbw::app
