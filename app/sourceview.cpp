#include "sourceview.h"

#include "background.h"
#include "cudahighlighter.h"
#include "generationpanel.h"
#include "linediff.h"
#include "pkbw/core/status.h"
#include "problemcatalog.h"
#include "qtconvert.h"
#include "runsources.h"
#include "theme.h"

#include <QCheckBox>
#include <QFile>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QScrollBar>
#include <QSplitter>
#include <QTabWidget>
#include <QTextBlock>
#include <QVBoxLayout>
#include <algorithm>

namespace pkbw::app {
namespace {

// Diagnostics, Exchanges and Trajectory come first; the run's logs follow them.
constexpr int kFixedLowerTabs = 3;

QPlainTextEdit* make_editor(QWidget* parent) {
    auto* e = new QPlainTextEdit(parent);
    e->setReadOnly(true);
    e->setLineWrapMode(QPlainTextEdit::NoWrap);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::TypeWriter);
    e->setFont(mono);
    return e;
}

QTextEdit::ExtraSelection line_selection(QPlainTextEdit* editor, int line, const QColor& color) {
    QTextEdit::ExtraSelection s;
    s.cursor = QTextCursor(editor->document()->findBlockByNumber(line));
    s.format.setBackground(color);
    s.format.setProperty(QTextFormat::FullWidthSelection, true);
    return s;
}

} // namespace

QList<Diagnostic> parse_diagnostics(const QString& log) {
    static const QRegularExpression gcc(
        QStringLiteral("^[^\\s:]+:(\\d+):(?:(\\d+):)?\\s*(fatal error|error|warning|note):\\s*(.*)$"));
    static const QRegularExpression nvcc(
        QStringLiteral("^[^\\s(]+\\((\\d+)\\):\\s*(error|warning|note)[^:]*:\\s*(.*)$"));
    QList<Diagnostic> out;
    for (const QString& raw : log.split(QLatin1Char('\n'))) {
        const QString line = raw.trimmed();
        if (auto m = gcc.match(line); m.hasMatch()) {
            out.push_back({m.captured(1).toInt(), m.captured(2).toInt(), m.captured(3), m.captured(4)});
        } else if (auto n = nvcc.match(line); n.hasMatch()) {
            out.push_back({n.captured(1).toInt(), 0, n.captured(2), n.captured(3)});
        }
    }
    return out;
}

SourceView::SourceView(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    summary_ = new QLabel(tr("No run open."), this);
    summary_->setObjectName(QStringLiteral("diffSummary"));
    aligned_ = new QCheckBox(tr("Align by diff"), this);
    aligned_->setObjectName(QStringLiteral("alignByDiff"));
    aligned_->setChecked(true);
    aligned_->setEnabled(false); // until there are two sources to align
    aligned_->setToolTip(tr("Unticked: each side is its own file, scrolled on its own (for two unrelated "
                            "implementations, which a line diff scatters over filler rows)"));
    auto* header = new QHBoxLayout;
    header->addWidget(summary_, 1);
    header->addWidget(aligned_);
    layout->addLayout(header);
    auto* split = new QSplitter(Qt::Horizontal, this);
    auto column = [&](QLabel*& title, QPlainTextEdit*& editor) {
        auto* w = new QWidget(split);
        auto* l = new QVBoxLayout(w);
        l->setContentsMargins(0, 0, 0, 0);
        title = new QLabel(w);
        // A long path must not widen the window: the label is clipped, the full text in its tooltip.
        title->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
        editor = make_editor(w);
        l->addWidget(title);
        l->addWidget(editor, 1);
        split->addWidget(w);
    };
    column(left_title_, left_);
    column(right_title_, right_);
    left_->setObjectName(QStringLiteral("referenceSource"));
    right_->setObjectName(QStringLiteral("candidateSource"));
    // Sources above, diagnostics / exchanges / trajectory / logs below, the split movable.
    auto* vertical = new QSplitter(Qt::Vertical, this);
    vertical->setObjectName(QStringLiteral("sourceSplit"));
    vertical->addWidget(split);
    bottom_ = new QTabWidget(vertical);
    bottom_->setObjectName(QStringLiteral("sourceLogs"));
    diagnostics_list_ = new QListWidget(bottom_);
    diagnostics_list_->setObjectName(QStringLiteral("diagnostics"));
    bottom_->addTab(diagnostics_list_, tr("Diagnostics"));
    exchanges_ = new ExchangesPanel(bottom_);
    trajectory_ = new TrajectoryPanel(bottom_);
    bottom_->addTab(exchanges_, tr("Exchanges"));
    bottom_->addTab(trajectory_, tr("Trajectory"));
    bottom_->setTabVisible(1, false);
    bottom_->setTabVisible(2, false);
    vertical->addWidget(bottom_);
    vertical->setStretchFactor(0, 3);
    vertical->setStretchFactor(1, 1);
    layout->addWidget(vertical, 1);
    connect(trajectory_, &TrajectoryPanel::run_activated, this, &SourceView::run_activated);
    connect(diagnostics_list_, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0 && row < diagnostics_.size()) {
            const Diagnostic& d = diagnostics_[row];
            const int line = d.line - 1;
            const QVector<int>& blocks = d.reference ? left_block_of_line_ : right_block_of_line_;
            QPlainTextEdit* side = d.reference ? left_ : right_;
            const int shown = line >= 0 && line < blocks.size() ? blocks[line] : line;
            const QTextBlock block = side->document()->findBlockByNumber(shown);
            side->setTextCursor(QTextCursor(block));
            side->centerCursor();
        }
    });
    // Aligned, the two sides scroll together, as a diff tool does; unaligned, each on its own.
    connect(left_->verticalScrollBar(), &QScrollBar::valueChanged, this, [this](int value) {
        if (aligned()) {
            right_->verticalScrollBar()->setValue(value);
        }
    });
    connect(right_->verticalScrollBar(), &QScrollBar::valueChanged, this, [this](int value) {
        if (aligned()) {
            left_->verticalScrollBar()->setValue(value);
        }
    });
    connect(aligned_, &QCheckBox::toggled, this, [this] { show_given(); });
}

void SourceView::set_data(std::shared_ptr<const RunData> data) {
    if (!data) {
        return;
    }
    const quint64 request = ++request_;
    summary_->setText(tr("Reading the sources of run %1…").arg(data->run.id));
    // The generation behind the candidate, from core's generation store (runs opened from a folder
    // have no store to ask).
    const quint64 generation_request = ++generation_request_;
    attempt_source_.clear();
    if (store_.isEmpty() || !data->from_store || data->run.id <= 0) {
        exchanges_->set_generation({});
        trajectory_->set_generation({});
        bottom_->setTabVisible(1, false);
        bottom_->setTabVisible(2, false);
        emit generation_loaded();
    } else {
        run_in_background(
            this,
            [run = data->run, store = to_path(store_)] {
                const Store s = Store::open_read_only(store);
                return load_run_generation(s, run);
            },
            [this, generation_request](Loaded<RunGeneration> r) {
                if (generation_request != generation_request_) {
                    return;
                }
                const RunGeneration g = r.ok() ? r.value : RunGeneration{};
                attempt_source_.clear();
                for (const AgentAttemptRow& a : g.trajectory) {
                    if (g.attempt && a.attempt == *g.attempt) {
                        attempt_source_ = to_qstring(a.source);
                        attempt_number_ = a.attempt;
                    }
                }
                if (shown_.request == request_) {
                    show_candidate(); // the sources came first: show the attempt's own text now
                }
                exchanges_->set_generation(g);
                trajectory_->set_generation(g);
                bottom_->setTabVisible(1, !g.exchanges.empty());
                bottom_->setTabVisible(2, !g.trajectory.empty());
                bottom_->setTabText(1, tr("Exchanges (%1)").arg(g.exchanges.size()));
                bottom_->setTabText(2, tr("Trajectory (%1)").arg(g.trajectory.size()));
                if (!g.trajectory.empty()) {
                    bottom_->setCurrentIndex(2);
                } else if (!g.exchanges.empty()) {
                    bottom_->setCurrentIndex(1);
                } else if (bottom_->currentIndex() == 1 || bottom_->currentIndex() == 2) {
                    bottom_->setCurrentIndex(0);
                }
                emit generation_loaded();
            });
    }
    // The reference fallback needs pkbw's problem folders: at start-up the list may still be loading,
    // and the sources are then read when it arrives.
    ProblemCatalogLoader& problems = problem_catalog_loader();
    if (!problems.ready()) {
        connect(
            &problems, &ProblemCatalogLoader::loaded, this,
            [this, request, data, &problems] {
                if (request == request_) {
                    load_sources(request, data, problems.catalog().problems_root());
                }
            },
            Qt::SingleShotConnection);
        return;
    }
    load_sources(request, data, problems.catalog().problems_root());
}

void SourceView::load_sources(quint64 request, std::shared_ptr<const RunData> data,
                              const QString& problems_root) {
    run_in_background(
        this,
        [data, store = to_path(store_), problems = to_path(problems_root)] {
            return load_run_sources(*data, store, problems);
        },
        [this, request, data](Loaded<RunSources> r) {
            if (request != request_) {
                return;
            }
            if (!r.ok()) {
                set_sources({}, {}, {}, {}, {}, r.error, r.error);
                emit loaded();
                return;
            }
            const RunSources& s = r.value;
            // Diagnostics from the compile logs in full; the rank messages when there are none.
            QString log, reference_log;
            QList<QPair<QString, QString>> logs;
            for (const RunLog& l : s.logs) {
                logs.append({to_qstring(l.name), to_qstring(l.text)});
                if (l.name.rfind("compile_reference", 0) == 0) {
                    reference_log += to_qstring(l.text) + QLatin1Char('\n');
                } else if (l.name.rfind("compile", 0) == 0) {
                    log += to_qstring(l.text) + QLatin1Char('\n');
                }
            }
            if (log.isEmpty()) {
                for (const RankResultRow& row : data->ranks) {
                    if (row.phase == status::kPhaseCompile || row.outcome == RankOutcome::CompileError) {
                        log += to_qstring(row.message) + QLatin1Char('\n');
                    }
                }
                if (data->run.status == RunStatus::CompileError) {
                    log += to_qstring(data->run.summary);
                }
            }
            auto title = [](const SourceFile& f) {
                QString t = to_qstring(f.found() ? f.title : f.error);
                if (!f.note.empty()) {
                    t += QStringLiteral(" — ") + to_qstring(f.note);
                }
                return t;
            };
            shown_ = {title(s.reference),
                      to_qstring(s.reference.text),
                      title(s.candidate),
                      to_qstring(s.candidate.text),
                      log,
                      to_qstring(s.reference.error),
                      to_qstring(s.candidate.error),
                      reference_log,
                      request};
            show_candidate();
            set_logs(logs);
            emit loaded();
        });
}

void SourceView::show_candidate() {
    QString title = shown_.right_title, text = shown_.right, error = shown_.right_error;
    // An agent writes every attempt to the same file, so the file holds the last attempt; the store
    // keeps each attempt's source, which is the code this run judged.
    if (!attempt_source_.isEmpty() && (attempt_source_ != text || !error.isEmpty())) {
        title = tr("attempt %1's source as pkbw agent recorded it in the store (the candidate file now holds "
                   "another)")
                    .arg(attempt_number_);
        text = attempt_source_;
        error.clear();
    }
    set_sources(shown_.left_title, shown_.left, title, text, shown_.log, shown_.left_error, error,
                shown_.reference_log);
}

void SourceView::set_logs(const QList<QPair<QString, QString>>& logs) {
    while (bottom_->count() > kFixedLowerTabs) {
        QWidget* w = bottom_->widget(kFixedLowerTabs);
        bottom_->removeTab(kFixedLowerTabs);
        delete w;
    }
    for (const auto& [name, text] : logs) {
        auto* e = make_editor(bottom_);
        e->setPlainText(text);
        bottom_->addTab(e, name);
    }
}

QStringList SourceView::log_names() const {
    QStringList names;
    for (int i = kFixedLowerTabs; i < bottom_->count(); ++i) {
        names << bottom_->tabText(i);
    }
    return names;
}

bool SourceView::has_exchanges() const {
    return bottom_->isTabVisible(1);
}

bool SourceView::has_trajectory() const {
    return bottom_->isTabVisible(2);
}

QString SourceView::shown_left() const {
    return left_->toPlainText();
}

QString SourceView::shown_right() const {
    return right_->toPlainText();
}

QString SourceView::right_title() const {
    return right_title_->text();
}

void SourceView::set_sources(const QString& left_title, const QString& left, const QString& right_title,
                             const QString& right, const QString& log, const QString& left_error,
                             const QString& right_error, const QString& reference_log) {
    given_ = {left_title, left, right_title, right, log, left_error, right_error, reference_log, 0};
    show_given();
}

bool SourceView::aligned() const {
    return aligned_->isChecked();
}

void SourceView::set_aligned(bool aligned) {
    aligned_->setChecked(aligned); // toggled shows the texts again
}

void SourceView::show_given() {
    const ShownSources& g = given_;
    left_text_ = g.left_error.isEmpty() ? g.left : QString();
    right_text_ = g.right_error.isEmpty() ? g.right : QString();
    const bool dark = current_theme() == Theme::Dark;
    left_title_->setText(g.left_title.isEmpty() ? g.left_error : g.left_title);
    right_title_->setText(g.right_title.isEmpty() ? g.right_error : g.right_title);
    left_title_->setToolTip(left_title_->text());
    right_title_->setToolTip(right_title_->text());
    const auto a = split_lines(to_std(g.left)), b = split_lines(to_std(g.right));
    const bool both = g.left_error.isEmpty() && g.right_error.isEmpty();
    // The counts in the header come from the diff, aligned or not.
    const std::vector<DiffLine> diff = both ? diff_lines(a, b) : std::vector<DiffLine>{};
    inserted_ = static_cast<int>(
        std::count_if(diff.begin(), diff.end(), [](const DiffLine& d) { return d.op == DiffOp::Insert; }));
    deleted_ = static_cast<int>(
        std::count_if(diff.begin(), diff.end(), [](const DiffLine& d) { return d.op == DiffOp::Delete; }));
    // Aligned: one display row per diff line, a filler where a side has no line, each real line
    // prefixed with its number. Unaligned, or without both texts (nothing to align against): each
    // side is its file alone, numbered, untinted.
    const bool align = both && aligned();
    std::vector<DiffLine> rows_of = align ? diff : std::vector<DiffLine>{};
    if (!align) {
        for (int i = 0; i < static_cast<int>(std::max(a.size(), b.size())); ++i) {
            rows_of.push_back({DiffOp::Equal, i < static_cast<int>(a.size()) ? i : -1,
                               i < static_cast<int>(b.size()) ? i : -1});
        }
    }
    const int width_l = static_cast<int>(QString::number(static_cast<int>(a.size())).size());
    const int width_r = static_cast<int>(QString::number(static_cast<int>(b.size())).size());
    QStringList left_rows, right_rows;
    right_block_of_line_ = QVector<int>(static_cast<int>(b.size()), 0);
    left_block_of_line_ = QVector<int>(static_cast<int>(a.size()), 0);
    QList<int> del_rows, ins_rows;
    int row = -1; // the display row: the diff's line aligned, the file's line unaligned
    for (const DiffLine& d : rows_of) {
        ++row;
        if (d.left >= 0) {
            left_rows
                << QStringLiteral("%1  %2").arg(d.left + 1, width_l).arg(to_qstring(a[std::size_t(d.left)]));
            left_block_of_line_[d.left] = row;
        } else if (align) {
            left_rows << QString(); // a filler row; unaligned, the shorter side simply ends
        }
        if (d.right >= 0) {
            right_rows << QStringLiteral("%1  %2")
                              .arg(d.right + 1, width_r)
                              .arg(to_qstring(b[std::size_t(d.right)]));
            right_block_of_line_[d.right] = row;
        } else if (align) {
            right_rows << QString();
        }
        if (align && d.op == DiffOp::Delete) {
            del_rows << row;
        } else if (align && d.op == DiffOp::Insert) {
            ins_rows << row;
        }
    }
    if (!g.left_error.isEmpty()) {
        left_rows = QStringList{g.left_error};
    }
    if (!g.right_error.isEmpty()) {
        right_rows = QStringList{g.right_error};
    }
    left_->setPlainText(left_rows.join(QLatin1Char('\n')));
    right_->setPlainText(right_rows.join(QLatin1Char('\n')));
    delete left_highlighter_;
    delete right_highlighter_;
    // PKB's solutions and references are Python (their inline CUDA sources show as strings).
    left_highlighter_ = new CudaHighlighter(left_->document(), dark, source_language(g.left_title));
    right_highlighter_ = new CudaHighlighter(right_->document(), dark, source_language(g.right_title));
    const QColor del = dark ? QColor(0x5a, 0x22, 0x22) : QColor(0xff, 0xe0, 0xe0);
    const QColor ins = dark ? QColor(0x1f, 0x4a, 0x2a) : QColor(0xdc, 0xf5, 0xdc);
    const QColor filler = dark ? QColor(0x30, 0x30, 0x34) : QColor(0xee, 0xee, 0xee);
    QList<QTextEdit::ExtraSelection> left_marks, right_marks;
    for (int row : del_rows) {
        left_marks << line_selection(left_, row, del);
        right_marks << line_selection(right_, row, filler);
    }
    for (int row : ins_rows) {
        right_marks << line_selection(right_, row, ins);
        left_marks << line_selection(left_, row, filler);
    }
    mark_diagnostics(left_marks, right_marks);
    left_->setExtraSelections(left_marks);
    right_->setExtraSelections(right_marks);
    aligned_->setEnabled(both);
    summary_->setText(
        both ? diff_summary()
             : tr("No diff: %1")
                       .arg(!g.right_error.isEmpty() ? tr("the candidate source is not available")
                                                     : tr("the reference source is not available")) +
                   (diagnostics_.isEmpty() ? QString()
                                           : tr("; %1 compiler diagnostics").arg(diagnostics_.size())));
}

void SourceView::mark_diagnostics(QList<QTextEdit::ExtraSelection>& left_marks,
                                  QList<QTextEdit::ExtraSelection>& right_marks) {
    diagnostics_ = parse_diagnostics(given_.log);
    for (Diagnostic d : parse_diagnostics(given_.reference_log)) {
        d.reference = true;
        diagnostics_ << d;
    }
    diagnostics_list_->clear();
    left_marked_ = right_marked_ = 0;
    for (const Diagnostic& d : diagnostics_) {
        const bool is_error = d.severity.contains(QLatin1String("error"));
        // Each diagnostic marks the side whose file it is about: the reference's log the left.
        const QVector<int>& blocks = d.reference ? left_block_of_line_ : right_block_of_line_;
        const bool shown = (d.reference ? given_.left_error : given_.right_error).isEmpty();
        if (shown && d.line >= 1 && d.line <= blocks.size()) {
            QTextEdit::ExtraSelection s =
                line_selection(d.reference ? left_ : right_, blocks[d.line - 1],
                               is_error ? QColor(0xf0, 0x80, 0x80) : QColor(0xf0, 0xd0, 0x70));
            s.format.setToolTip(d.message);
            (d.reference ? left_marks : right_marks) << s;
            ++(d.reference ? left_marked_ : right_marked_);
        }
        diagnostics_list_->addItem((d.reference ? tr("reference line %1: %2: %3") : tr("line %1: %2: %3"))
                                       .arg(d.line)
                                       .arg(d.severity, d.message));
    }
    bottom_->setTabText(0, tr("Diagnostics (%1)").arg(diagnostics_.size()));
}

QString SourceView::diff_summary() const {
    QString text =
        tr("Reference (left) vs candidate (right): %1 lines only in the reference, %2 only in the candidate")
            .arg(deleted_)
            .arg(inserted_);
    if (!diagnostics_.isEmpty()) {
        text += tr("; %1 compiler diagnostics").arg(diagnostics_.size());
    }
    return text;
}

} // namespace pkbw::app
