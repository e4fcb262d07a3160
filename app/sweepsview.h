// Sweeps: one sweep of the store at a time (a picker, newest first), its table per generation
// (attempted, correct, faster, fast_p, geomean, failures by kind: core's sweep_table, the numbers of
// `pkbw show --sweep ID`), the fast_p curve of each generation, the progress of a sweep still running
// (re-read every few seconds while its status is "running"), and the pairs that did not pass, each
// opening its run when activated.
#pragma once

#include "pkbw/core/sweep_table.h"

#include <QWidget>
#include <vector>

class QComboBox;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QTableWidget;
class QTimer;

namespace pkbw::app {

// The fast_p curve of one generation as steps (p, fast_p(p)): from p = 0 (the correct share) to each
// distinct fast_bound (a pair's interval low end, or its speedup when stored without an interval),
// ending at zero past the largest; empty when nothing was attempted.
std::vector<std::pair<double, double>> sweep_fast_p_steps(const SweepGenerationRow& row, double p_end);

class SweepsView : public QWidget {
    Q_OBJECT
public:
    explicit SweepsView(QWidget* parent = nullptr);
    void set_store(const QString& path);
    // Shows that sweep (reads the store on a worker; `loaded` follows).
    void show_sweep(qint64 sweep_id);
    void reload();
    // How often a running sweep is re-read (ms); 0 stops it.
    void set_refresh_interval(int ms);

    qint64 sweep_id() const { return sweep_id_; }
    const SweepTable& table() const { return table_; }
    bool refreshing() const;
    QComboBox* picker() const { return picker_; }
    QTableWidget* generation_table() const { return generations_; }
    QTableWidget* failing_table() const { return failing_; }
    QCustomPlot* fast_p_plot() const { return plot_; }
    // Shown instead of the fast_p plot for an eval sweep (no speedups to draw).
    QLabel* eval_note() const { return eval_note_; }
    QProgressBar* progress() const { return progress_; }
    QString header_text() const; // the line above the table (sweep, mode, progress)
    // Opens the run of row `row` of the failing pairs (what a double click does).
    void activate_failing(int row);

signals:
    void loaded();
    void run_activated(qint64 run_id);

private:
    void load_list(qint64 select);
    void show_table(const SweepTable& table);
    void fill_failing(const SweepTable& table);
    void plot_fast_p(const SweepTable& table, bool perf);

    QString store_;
    qint64 sweep_id_ = 0;
    quint64 request_ = 0;
    bool filling_picker_ = false;
    SweepTable table_;
    std::vector<std::string> store_generations_; // the store's generation labels: plot colours
    QComboBox* picker_ = nullptr;
    QLabel* header_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QTableWidget* generations_ = nullptr;
    QTableWidget* failing_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    QLabel* eval_note_ = nullptr;
    QTimer* refresh_ = nullptr;
};

} // namespace pkbw::app
