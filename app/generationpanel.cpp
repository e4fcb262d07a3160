#include "generationpanel.h"

#include "linediff.h"
#include "qtconvert.h"
#include "theme.h"

#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextBlock>
#include <QVBoxLayout>

namespace pkbw::app {
namespace {

QTableWidget* make_table(QWidget* parent, const QStringList& headers, const QString& name) {
    auto* t = new QTableWidget(parent);
    t->setObjectName(name);
    t->setColumnCount(static_cast<int>(headers.size()));
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

QPlainTextEdit* make_text(QWidget* parent, const QString& name) {
    auto* e = new QPlainTextEdit(parent);
    e->setObjectName(name);
    e->setReadOnly(true);
    QFont mono(QStringLiteral("monospace"));
    mono.setStyleHint(QFont::TypeWriter);
    e->setFont(mono);
    return e;
}

QTableWidgetItem* item(const QString& text) {
    return new QTableWidgetItem(text);
}

template <class T>
QString optional_number(const std::optional<T>& value, int decimals = -1) {
    if (!value) {
        return QStringLiteral("-");
    }
    if constexpr (std::is_floating_point_v<T>) {
        return QString::number(*value, 'f', decimals < 0 ? 2 : decimals);
    } else {
        return QString::number(*value);
    }
}

} // namespace

QString attempt_diff(const QString& previous, const QString& current) {
    const auto a = split_lines(to_std(previous)), b = split_lines(to_std(current));
    QStringList out;
    for (const DiffLine& d : diff_lines(a, b)) {
        switch (d.op) {
        case DiffOp::Equal:
            out << QStringLiteral("  ") + to_qstring(b[static_cast<std::size_t>(d.right)]);
            break;
        case DiffOp::Delete:
            out << QStringLiteral("- ") + to_qstring(a[static_cast<std::size_t>(d.left)]);
            break;
        case DiffOp::Insert:
            out << QStringLiteral("+ ") + to_qstring(b[static_cast<std::size_t>(d.right)]);
            break;
        }
    }
    return out.join(QLatin1Char('\n'));
}

ExchangesPanel::ExchangesPanel(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    summary_ = new QLabel(this);
    summary_->setObjectName(QStringLiteral("exchangesSummary"));
    summary_->setWordWrap(true);
    layout->addWidget(summary_);
    auto* split = new QSplitter(Qt::Horizontal, this);
    table_ = make_table(split,
                        {tr("Attempt"), tr("Try"), tr("Outcome"), tr("Finish"), tr("HTTP"), tr("Tokens in"),
                         tr("Tokens out"), tr("Latency ms"), tr("Cost $"), tr("Started")},
                        QStringLiteral("exchanges"));
    texts_ = new QTabWidget(split);
    prompt_ = make_text(texts_, QStringLiteral("exchangePrompt"));
    reply_ = make_text(texts_, QStringLiteral("exchangeReply"));
    reply_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    prompt_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    texts_->addTab(reply_, tr("Reply"));
    texts_->addTab(prompt_, tr("Prompt"));
    split->addWidget(table_);
    split->addWidget(texts_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);
    connect(table_, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) { select(row); });
}

void ExchangesPanel::set_generation(const RunGeneration& generation) {
    data_ = generation;
    table_->setRowCount(0);
    std::int64_t in = 0, out = 0;
    double cost = 0;
    bool any_cost = false;
    for (const ExchangeRow& e : data_.exchanges) {
        const int row = table_->rowCount();
        table_->insertRow(row);
        table_->setItem(row, 0, item(QString::number(e.attempt)));
        table_->setItem(row, 1, item(QString::number(e.try_number)));
        auto* outcome = item(to_qstring(e.outcome));
        if (e.outcome != "saved") {
            outcome->setForeground(QColor(0xc0, 0x39, 0x2b));
        }
        outcome->setToolTip(to_qstring(e.message));
        table_->setItem(row, 2, outcome);
        table_->setItem(row, 3, item(to_qstring(e.finish_reason)));
        table_->setItem(row, 4, item(optional_number(e.http_status)));
        table_->setItem(row, 5, item(optional_number(e.input_tokens)));
        table_->setItem(row, 6, item(optional_number(e.output_tokens)));
        table_->setItem(row, 7, item(optional_number(e.latency_ms, 0)));
        table_->setItem(row, 8, item(optional_number(e.cost_usd, 4)));
        table_->setItem(row, 9, item(format_time(e.started_at)));
        in += e.input_tokens.value_or(0);
        out += e.output_tokens.value_or(0);
        if (e.cost_usd) {
            cost += *e.cost_usd;
            any_cost = true;
        }
    }
    if (!data_.generation) {
        summary_->setText(tr("This run's candidate was not made by pkbw generate or pkbw agent."));
    } else {
        const GenerationRow& g = *data_.generation;
        summary_->setText(tr("%1 generation %2 (%3): %4/%5 over %6, %7 requests, %8 tokens in, %9 out, cost "
                             "estimate %10")
                              .arg(to_qstring(g.kind))
                              .arg(g.id)
                              .arg(to_qstring(g.label), to_qstring(g.provider), to_qstring(g.model),
                                   to_qstring(g.wire_format))
                              .arg(data_.exchanges.size())
                              .arg(in)
                              .arg(out)
                              .arg(any_cost ? QStringLiteral("$%1").arg(cost, 0, 'f', 4) : tr("unknown")));
    }
    prompt_->clear();
    reply_->clear();
    if (!data_.exchanges.empty()) {
        table_->setCurrentCell(static_cast<int>(data_.exchanges.size()) - 1, 0);
        select(static_cast<int>(data_.exchanges.size()) - 1);
    }
}

void ExchangesPanel::select(int row) {
    if (row < 0 || row >= static_cast<int>(data_.exchanges.size())) {
        return;
    }
    const ExchangeRow& e = data_.exchanges[static_cast<std::size_t>(row)];
    QString prompt;
    if (!e.system_prompt.empty()) {
        prompt += tr("── system ──\n") + to_qstring(e.system_prompt) + QStringLiteral("\n\n");
    }
    prompt += tr("── user ──\n") + to_qstring(e.user_prompt);
    prompt_->setPlainText(prompt);
    QString reply = to_qstring(e.reply_text.empty() ? e.reply_body : e.reply_text);
    if (!e.message.empty()) {
        reply = tr("[%1: %2]\n\n").arg(to_qstring(e.outcome), to_qstring(e.message)) + reply;
    }
    reply_->setPlainText(reply);
}

QString ExchangesPanel::shown_prompt() const {
    return prompt_->toPlainText();
}
QString ExchangesPanel::shown_reply() const {
    return reply_->toPlainText();
}
QString ExchangesPanel::summary() const {
    return summary_->text();
}

TrajectoryPanel::TrajectoryPanel(QWidget* parent)
    : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    summary_ = new QLabel(this);
    summary_->setObjectName(QStringLiteral("trajectorySummary"));
    summary_->setWordWrap(true);
    layout->addWidget(summary_);
    auto* split = new QSplitter(Qt::Horizontal, this);
    table_ = make_table(split,
                        {tr("Attempt"), tr("Parent"), tr("Verdict"), tr("Speedup ×"), tr("Fast"),
                         tr("Cost $"), tr("Run"), tr("Feedback to the model")},
                        QStringLiteral("trajectory"));
    table_->setToolTip(tr("Double-click an attempt to open its run."));
    diff_ = make_text(split, QStringLiteral("attemptDiff"));
    diff_->setLineWrapMode(QPlainTextEdit::NoWrap);
    split->addWidget(table_);
    split->addWidget(diff_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);
    connect(table_, &QTableWidget::currentCellChanged, this, [this](int row, int, int, int) { select(row); });
    connect(table_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        if (row >= 0 && row < static_cast<int>(data_.trajectory.size())) {
            if (auto run = data_.trajectory[static_cast<std::size_t>(row)].run_id) {
                emit run_activated(*run);
            }
        }
    });
}

void TrajectoryPanel::set_generation(const RunGeneration& generation) {
    data_ = generation;
    table_->setRowCount(0);
    int current = -1;
    for (const AgentAttemptRow& a : data_.trajectory) {
        const int row = table_->rowCount();
        // The speedup as every table shows one: verdict and interval ("1.310× faster [1.201–1.402]").
        QString speedup = a.speedup ? format_ratio(*a.speedup) : QStringLiteral("-");
        QString speedup_tip;
        const auto index = static_cast<std::size_t>(row);
        const auto status = parse_run_status(a.verdict);
        if (a.speedup && status && !speedup_is_result(*status)) {
            // Attempts stored before the agent withheld them keep an untrusted run's speedup: not shown.
            speedup = withheld_speedup_text(*status);
        } else if (a.speedup && index < data_.trajectory_speedups.size() &&
                   data_.trajectory_speedups[index]) {
            speedup = result_speedup_text(*data_.trajectory_speedups[index]);
            speedup_tip = result_speedup_tooltip(*data_.trajectory_speedups[index]);
        }
        table_->insertRow(row);
        table_->setItem(row, 0, item(QString::number(a.attempt)));
        table_->setItem(row, 1,
                        item(a.parent_attempt ? QString::number(*a.parent_attempt) : QStringLiteral("-")));
        auto* verdict = item(to_qstring(a.verdict));
        if (auto s = parse_run_status(a.verdict)) {
            verdict->setForeground(status_color(*s));
        }
        table_->setItem(row, 2, verdict);
        table_->setItem(row, 3, item(speedup));
        table_->item(row, 3)->setToolTip(speedup_tip);
        table_->setItem(row, 4, item(a.fast ? tr("yes") : tr("no")));
        table_->setItem(row, 5, item(optional_number(a.cost_usd, 4)));
        table_->setItem(row, 6, item(optional_number(a.run_id)));
        QString feedback = to_qstring(a.feedback).section(QLatin1Char('\n'), 0, 0);
        auto* fb = item(feedback);
        fb->setToolTip(to_qstring(a.feedback));
        table_->setItem(row, 7, fb);
        if (data_.attempt && a.attempt == *data_.attempt) {
            current = row;
            for (int c = 0; c < table_->columnCount(); ++c) {
                QFont f = table_->item(row, c)->font();
                f.setBold(true);
                table_->item(row, c)->setFont(f);
            }
        }
    }
    if (data_.trajectory.empty()) {
        summary_->setText(tr("No agent trajectory: this run did not judge a pkbw agent attempt."));
        diff_->clear();
        return;
    }
    const auto& last = data_.trajectory.back();
    summary_->setText(
        tr("pkbw agent on %1: %2 attempts, the last %3; this run is attempt %4 (bold). The diff is "
           "against the attempt's parent.")
            .arg(to_qstring(last.problem_stem))
            .arg(data_.trajectory.size())
            .arg(to_qstring(last.verdict))
            .arg(data_.attempt ? QString::number(*data_.attempt) : QStringLiteral("-")));
    const int shown = current >= 0 ? current : static_cast<int>(data_.trajectory.size()) - 1;
    table_->setCurrentCell(shown, 0);
    select(shown);
}

void TrajectoryPanel::select(int row) {
    if (row < 0 || row >= static_cast<int>(data_.trajectory.size())) {
        return;
    }
    const AgentAttemptRow& a = data_.trajectory[static_cast<std::size_t>(row)];
    QString previous;
    int previous_attempt = 0;
    const int parent = a.parent_attempt.value_or(a.attempt - 1);
    for (const AgentAttemptRow& p : data_.trajectory) {
        if (p.attempt == parent) {
            previous = to_qstring(p.source);
            previous_attempt = p.attempt;
        }
    }
    const QString text = attempt_diff(previous, to_qstring(a.source));
    diff_->setPlainText(text);
    const bool dark = current_theme() == Theme::Dark;
    const QColor del = dark ? QColor(0x5a, 0x22, 0x22) : QColor(0xff, 0xe0, 0xe0);
    const QColor ins = dark ? QColor(0x1f, 0x4a, 0x2a) : QColor(0xdc, 0xf5, 0xdc);
    QList<QTextEdit::ExtraSelection> marks;
    for (QTextBlock b = diff_->document()->begin(); b.isValid(); b = b.next()) {
        const QString line = b.text();
        if (line.startsWith(QLatin1String("- ")) || line.startsWith(QLatin1String("+ "))) {
            QTextEdit::ExtraSelection s;
            s.cursor = QTextCursor(b);
            s.format.setBackground(line.startsWith(QLatin1Char('-')) ? del : ins);
            s.format.setProperty(QTextFormat::FullWidthSelection, true);
            marks << s;
        }
    }
    diff_->setExtraSelections(marks);
    diff_->setToolTip(previous_attempt > 0
                          ? tr("attempt %1 against attempt %2").arg(a.attempt).arg(previous_attempt)
                          : tr("attempt %1 (the first: all added)").arg(a.attempt));
}

QString TrajectoryPanel::shown_diff() const {
    return diff_->toPlainText();
}
QString TrajectoryPanel::summary() const {
    return summary_->text();
}

} // namespace pkbw::app
