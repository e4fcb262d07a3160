// Reference and candidate sources side by side, highlighted, aligned by a line diff (filler lines
// where one side has none, line numbers on each side, changed lines tinted, counts in the header)
// or, with "Align by diff" unticked, each side as its own file, scrolled on its own (two unrelated
// implementations, such as a PKB solution beside its reference, scatter over filler rows when aligned),
// every compiler diagnostic annotated on its line and listed, and the run's compile and rank logs;
// for a candidate made by pkbw generate or pkbw agent, the model exchanges and the agent's trajectory
// (generationpanel.h) in the lower tabs.
#pragma once

#include "rundata.h"

#include <QTextEdit>
#include <QWidget>
#include <memory>

class QCheckBox;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QTabWidget;

namespace pkbw::app {

class CudaHighlighter;
class ExchangesPanel;
class TrajectoryPanel;

struct Diagnostic {
    int line = 0; // 1-based
    int column = 0;
    QString severity; // "error", "warning", "note"
    QString message;
    bool reference = false; // from the reference's compile log: its line is the left side's
};
// gcc/clang/nvcc diagnostics: "file:line:col: error: text" and nvcc's "file(line): error: text".
QList<Diagnostic> parse_diagnostics(const QString& log);

class SourceView : public QWidget {
    Q_OBJECT
public:
    explicit SourceView(QWidget* parent = nullptr);
    void set_store(const QString& path) { store_ = path; }
    void set_data(std::shared_ptr<const RunData> data);
    // Shows two texts (what set_data does after reading the files); `log` holds compiler output.
    // An empty `right_error` / `left_error` means the text was found; otherwise no diff is made.
    // `reference_log` holds the reference's compiler output: its diagnostics mark the left side.
    void set_sources(const QString& left_title, const QString& left, const QString& right_title,
                     const QString& right, const QString& log = {}, const QString& left_error = {},
                     const QString& right_error = {}, const QString& reference_log = {});
    // The run's logs (name, text), one tab each.
    void set_logs(const QList<QPair<QString, QString>>& logs);

    // The aligned texts as shown (line-number prefix, filler lines empty), for tests.
    QString shown_left() const;
    QString shown_right() const;
    QString right_title() const;
    // The texts as given (before alignment); empty where the side was not found.
    const QString& left_text() const { return left_text_; }
    const QString& right_text() const { return right_text_; }
    QStringList log_names() const;
    ExchangesPanel* exchanges() const { return exchanges_; }
    TrajectoryPanel* trajectory() const { return trajectory_; }
    // Whether the Exchanges / Trajectory tabs are shown (the run has them).
    bool has_exchanges() const;
    bool has_trajectory() const;
    QTabWidget* lower_tabs() const { return bottom_; }

    // Whether the sides are aligned by the diff (the default) or shown unaligned, each as its file.
    bool aligned() const;
    void set_aligned(bool aligned);

    QString diff_summary() const;
    int inserted_lines() const { return inserted_; }
    int deleted_lines() const { return deleted_; }
    const QList<Diagnostic>& diagnostics() const { return diagnostics_; }
    // How many diagnostics marked a line of each side (tests).
    int marked_lines(bool reference_side) const { return reference_side ? left_marked_ : right_marked_; }

signals:
    void loaded();
    void generation_loaded();          // the exchanges and trajectory of the run were read
    void run_activated(qint64 run_id); // an attempt of the trajectory was double-clicked

private:
    // Reads the run's sources and logs on a worker (problems_root: pkbw's problem folders, for the
    // reference of runs recorded before sources were archived).
    void load_sources(quint64 request, std::shared_ptr<const RunData> data, const QString& problems_root);
    // The candidate side: the file read from disk, or the agent attempt's recorded source when the
    // file no longer holds what this run judged.
    void show_candidate();
    struct ShownSources {
        QString left_title, left, right_title, right, log, left_error, right_error, reference_log;
        quint64 request = 0; // the set_data call these came from
    };

    // Shows given_ (the texts of the last set_sources) aligned or not.
    void show_given();
    // Tints each diagnostic's line and lists every diagnostic.
    void mark_diagnostics(QList<QTextEdit::ExtraSelection>& left_marks,
                          QList<QTextEdit::ExtraSelection>& right_marks);

    QString store_;
    quint64 request_ = 0;
    ShownSources given_; // what set_sources was last given
    ShownSources shown_;
    QString attempt_source_;
    int attempt_number_ = 0;
    QVector<int> right_block_of_line_; // candidate line (0-based) -> display block
    QVector<int> left_block_of_line_;  // reference line (0-based) -> display block
    QTabWidget* bottom_ = nullptr;
    QLabel* left_title_ = nullptr;
    QLabel* right_title_ = nullptr;
    QLabel* summary_ = nullptr;
    QCheckBox* aligned_ = nullptr;
    QPlainTextEdit* left_ = nullptr;
    QPlainTextEdit* right_ = nullptr;
    QListWidget* diagnostics_list_ = nullptr;
    ExchangesPanel* exchanges_ = nullptr;
    TrajectoryPanel* trajectory_ = nullptr;
    quint64 generation_request_ = 0;
    QList<Diagnostic> diagnostics_;
    CudaHighlighter* left_highlighter_ = nullptr;
    CudaHighlighter* right_highlighter_ = nullptr;
    int inserted_ = 0, deleted_ = 0;
    QString left_text_, right_text_;
    int left_marked_ = 0, right_marked_ = 0;
};

} // namespace pkbw::app
