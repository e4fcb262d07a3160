#include "sourceview.h"

#include "cudahighlighter.h"
#include "linediff.h"
#include "qtconvert.h"
#include "theme.h"

#include <QFile>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QScrollBar>
#include <QSplitter>
#include <QTextBlock>
#include <QVBoxLayout>

namespace pkbw::app {
namespace {

QString read_text(const QString& path, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QObject::tr("%1: %2").arg(path, f.errorString());
        return {};
    }
    return QString::fromUtf8(f.read(4 << 20));
}

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
    layout->addWidget(summary_);
    auto* split = new QSplitter(Qt::Horizontal, this);
    auto column = [&](QLabel*& title, QPlainTextEdit*& editor) {
        auto* w = new QWidget(split);
        auto* l = new QVBoxLayout(w);
        l->setContentsMargins(0, 0, 0, 0);
        title = new QLabel(w);
        editor = make_editor(w);
        l->addWidget(title);
        l->addWidget(editor, 1);
        split->addWidget(w);
    };
    column(left_title_, left_);
    column(right_title_, right_);
    layout->addWidget(split, 1);
    diagnostics_list_ = new QListWidget(this);
    diagnostics_list_->setObjectName(QStringLiteral("diagnostics"));
    diagnostics_list_->setMaximumHeight(120);
    layout->addWidget(diagnostics_list_);
    connect(diagnostics_list_, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0 && row < diagnostics_.size()) {
            const QTextBlock block = right_->document()->findBlockByNumber(diagnostics_[row].line - 1);
            right_->setTextCursor(QTextCursor(block));
            right_->centerCursor();
        }
    });
    // Scroll the two sides together, as a diff tool does.
    connect(left_->verticalScrollBar(), &QScrollBar::valueChanged, right_->verticalScrollBar(),
            &QScrollBar::setValue);
    connect(right_->verticalScrollBar(), &QScrollBar::valueChanged, left_->verticalScrollBar(),
            &QScrollBar::setValue);
}

void SourceView::set_data(std::shared_ptr<const RunData> data) {
    if (!data) {
        return;
    }
    const RunRecord& run = data->run;
    QString error;
    const QString folder = QStringLiteral(PKBW_SOURCE_ROOT "/problems/") + to_qstring(run.problem_stem);
    const QString ref_path = folder + (run.backend == "host" ? QStringLiteral("/reference_host.cpp")
                                                             : QStringLiteral("/reference.cu"));
    const QString reference = read_text(ref_path, &error);
    QString cand_error;
    const QString cand_path = to_qstring(run.solution_path);
    const QString candidate = cand_path.isEmpty() ? QString() : read_text(cand_path, &cand_error);
    QString log;
    for (const RankResultRow& r : data->ranks) {
        if (r.phase == "compile" || r.outcome == RankOutcome::CompileError) {
            log += to_qstring(r.message) + QLatin1Char('\n');
        }
    }
    if (run.status == RunStatus::CompileError) {
        log += to_qstring(run.summary);
    }
    set_sources(error.isEmpty() ? ref_path : error, reference,
                cand_path.isEmpty() ? tr("(no solution file recorded)")
                                    : (cand_error.isEmpty() ? cand_path : cand_error),
                candidate, log);
}

void SourceView::set_sources(const QString& left_title, const QString& left, const QString& right_title,
                             const QString& right, const QString& log) {
    const bool dark = current_theme() == Theme::Dark;
    left_title_->setText(left_title);
    right_title_->setText(right_title);
    left_->setPlainText(left);
    right_->setPlainText(right);
    delete left_highlighter_;
    delete right_highlighter_;
    left_highlighter_ = new CudaHighlighter(left_->document(), dark);
    right_highlighter_ = new CudaHighlighter(right_->document(), dark);

    const auto a = split_lines(to_std(left)), b = split_lines(to_std(right));
    const auto diff = diff_lines(a, b);
    const QColor del = dark ? QColor(0x5a, 0x22, 0x22) : QColor(0xff, 0xe0, 0xe0);
    const QColor ins = dark ? QColor(0x1f, 0x4a, 0x2a) : QColor(0xdc, 0xf5, 0xdc);
    QList<QTextEdit::ExtraSelection> left_marks, right_marks;
    inserted_ = deleted_ = 0;
    for (const DiffLine& d : diff) {
        if (d.op == DiffOp::Delete) {
            ++deleted_;
            left_marks << line_selection(left_, d.left, del);
        } else if (d.op == DiffOp::Insert) {
            ++inserted_;
            right_marks << line_selection(right_, d.right, ins);
        }
    }
    diagnostics_ = parse_diagnostics(log);
    diagnostics_list_->clear();
    for (const Diagnostic& d : diagnostics_) {
        const bool is_error = d.severity.contains(QLatin1String("error"));
        if (d.line >= 1 && d.line <= right_->document()->blockCount()) {
            QTextEdit::ExtraSelection s = line_selection(
                right_, d.line - 1, is_error ? QColor(0xf0, 0x80, 0x80) : QColor(0xf0, 0xd0, 0x70));
            s.format.setToolTip(d.message);
            right_marks << s;
        }
        diagnostics_list_->addItem(tr("line %1: %2: %3").arg(d.line).arg(d.severity, d.message));
    }
    diagnostics_list_->setVisible(!diagnostics_.isEmpty());
    left_->setExtraSelections(left_marks);
    right_->setExtraSelections(right_marks);
    summary_->setText(diff_summary());
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
