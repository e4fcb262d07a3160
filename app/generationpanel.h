// Beside a run's sources (the Sources tab's lower tabs): the model exchanges behind its candidate
// (prompt, reply text, finish reason, tokens, latency, cost estimate per request) and, for a run
// that judged an agent attempt, the trajectory (attempt, parent, verdict, speedup, cost, run) with
// each attempt's source diffed against the attempt before it (its parent).
#pragma once

#include "rungeneration.h"

#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QTableWidget;
class QTabWidget;

namespace pkbw::app {

class ExchangesPanel : public QWidget {
    Q_OBJECT
public:
    explicit ExchangesPanel(QWidget* parent = nullptr);
    void set_generation(const RunGeneration& generation);
    void select(int row);
    QTableWidget* table() const { return table_; }
    QString shown_prompt() const;
    QString shown_reply() const;
    QString summary() const;

private:
    RunGeneration data_;
    QLabel* summary_ = nullptr;
    QTableWidget* table_ = nullptr;
    QTabWidget* texts_ = nullptr;
    QPlainTextEdit* prompt_ = nullptr;
    QPlainTextEdit* reply_ = nullptr;
};

class TrajectoryPanel : public QWidget {
    Q_OBJECT
public:
    explicit TrajectoryPanel(QWidget* parent = nullptr);
    void set_generation(const RunGeneration& generation);
    void select(int row);
    QTableWidget* table() const { return table_; }
    QString shown_diff() const;
    QString summary() const;

signals:
    void run_activated(qint64 run_id);

private:
    RunGeneration data_;
    QLabel* summary_ = nullptr;
    QTableWidget* table_ = nullptr;
    QPlainTextEdit* diff_ = nullptr;
};

// The source of an attempt against the one before it as a unified listing: "  " kept, "- " removed,
// "+ " added, one line each; the first attempt is all added.
QString attempt_diff(const QString& previous, const QString& current);

} // namespace pkbw::app
