// Generations: a generation x problem matrix (one run per cell, the latest or the best result, its
// own status and speedup; activating a cell opens that run), a per-generation table (attempted,
// correct, fast_1, geomean with its n) over a fixed, stated denominator (the problems the
// generations were run on), the fast_p curve per generation (p continuous) and the geometric-mean
// speedup per generation over correct results. Calibration runs, the reference and ad-hoc
// candidates (no generation folder) are left out and counted; infrastructure errors (error,
// interrupted, aborted, running) never stand in for a result.
#pragma once

#include "pkbw/core/perf_stats.h"
#include "pkbw/core/store.h"
#include "scoring.h"

#include <QAbstractTableModel>
#include <QWidget>
#include <map>

class QCustomPlot;
class QLabel;
class QSplitter;
class QTableView;
class QTableWidget;
class QComboBox;

namespace pkbw::app {

// Which run a cell shows. Latest: the newest measured result (a perf run, or an imported PKB run
// with PKB's speedup), else the newest eval result. Best: the correct result with the largest
// speedup, else as latest.
enum class CellPick { Latest, Best };

struct MatrixCell {
    std::int64_t run_id = 0; // the run shown
    RunStatus status = RunStatus::Running;
    std::optional<double> speedup;         // that run's own speedup (pkbw's, or PKB's for imported runs)
    std::optional<double> ci_low, ci_high; // pkbw's stored 95% interval (absent in older runs, PKB's)
    std::optional<Verdict> verdict;        // pkbw's stored verdict
    std::optional<double> pkb_speedup;     // PKB's figure stored beside pkbw's (a disagreement shows)
    std::string speedup_source;            // "pkbw", "PKB" or ""
    bool correct = false;
    bool result = false;  // false: only infrastructure errors (no result), shown apart
    int results = 0;      // result runs of the pair
    int infra_errors = 0; // runs of the pair that ended in an infrastructure error
    // What the paper figures read of the cell (core's PairOutcome).
    PairOutcome outcome() const;
};

struct GenerationStats {
    // Core's PaperFigures over the fixed denominator (every problem of the matrix): the figures and
    // rules of the Sweeps tab and `pkbw show --sweep`. fast_1: correct and, by its verdict, faster.
    PaperFigures figures;
    int attempted = 0, correct = 0, fast_1 = 0, infra_only = 0;
    std::optional<double> geomean; // over correct, measured results
    int geomean_n = 0;
};

struct GenerationMatrix {
    std::vector<std::string> generations;            // full labels (folder names)
    std::vector<std::string> store_generations;      // every generation of the store: plot colours
    std::vector<std::string> short_labels;           // provider/model when parsed
    std::vector<std::string> problems;               // in problem-number order
    std::map<std::pair<int, int>, MatrixCell> cells; // (generation, problem)
    CellPick pick = CellPick::Latest;
    int left_out_calibration = 0, left_out_reference = 0, left_out_adhoc = 0;
    // Over the fixed denominator: every problem of the matrix, one result per problem (none when
    // not attempted or only infrastructure errors).
    std::vector<ScoredResult> results_of(int generation) const;
    GenerationStats stats_of(int generation) const;
};
// Reads every run (newest first) and the speedup summaries of the runs that carry one.
GenerationMatrix load_generation_matrix(const Store& store, CellPick pick = CellPick::Latest);

// The store's generation labels (its runs' folders that parse as generations), in name order: what a
// generation's plot colour is ranked among on every tab (generation_pen).
std::vector<std::string> store_generation_labels(const Store& store);
// "provider/model" of a parsed label, else the label.
std::string short_generation_label(const GenerationLabel& label);
bool is_infrastructure_error(RunStatus status);

class GenerationMatrixModel : public QAbstractTableModel {
    Q_OBJECT
public:
    explicit GenerationMatrixModel(QObject* parent = nullptr);
    void set_matrix(GenerationMatrix matrix);
    const GenerationMatrix& matrix() const { return matrix_; }
    std::int64_t run_id(const QModelIndex& index) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    const MatrixCell* cell(int row, int column) const;
    GenerationMatrix matrix_;
};

class GenerationsView : public QWidget {
    Q_OBJECT
public:
    explicit GenerationsView(QWidget* parent = nullptr);
    void set_store(const QString& path);
    void reload();
    GenerationMatrixModel* model() const { return model_; }
    QCustomPlot* fast_p_plot() const { return fast_p_; }
    QCustomPlot* geomean_plot() const { return geomean_; }
    QTableWidget* stats_table() const { return stats_; }
    void set_pick(CellPick pick);
    QString status_text() const;
    QString status_tooltip() const; // the problems, when the header has too many to name

    // The matrix and the per-generation table: side by side when both fit whole, else one above the
    // other (review point 25).
    QSplitter* tables_splitter() const { return tables_; }
    QTableView* matrix_view() const { return view_; }

signals:
    void run_activated(qint64 run_id);
    void loaded();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void update_plots();
    void fit_tables();

    QString store_;
    GenerationMatrixModel* model_ = nullptr;
    QTableView* view_ = nullptr;
    QSplitter* tables_ = nullptr;
    QSplitter* split_ = nullptr; // the tables above, the charts below
    QLabel* status_ = nullptr;
    QTableWidget* stats_ = nullptr;
    QComboBox* pick_ = nullptr;
    QCustomPlot* fast_p_ = nullptr;
    QCustomPlot* geomean_ = nullptr;
};

} // namespace pkbw::app
