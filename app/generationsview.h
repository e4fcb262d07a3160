// Generations: a generation x problem matrix (latest run's status and speedup per cell; activating a
// cell opens that run), the fast_p curve per generation (p continuous) and the geometric-mean
// speedup per generation over correct results.
#pragma once

#include "pkbw/core/store.h"
#include "scoring.h"

#include <QAbstractTableModel>
#include <QWidget>
#include <map>

class QCustomPlot;
class QLabel;
class QTableView;

namespace pkbw::app {

struct MatrixCell {
    std::int64_t run_id = 0; // latest run of the pair
    RunStatus status = RunStatus::Running;
    std::optional<double> speedup; // latest perf run's speedup
    bool correct = false;
};

struct GenerationMatrix {
    std::vector<std::string> generations, problems;
    std::map<std::pair<int, int>, MatrixCell> cells; // (generation, problem)
    std::vector<ScoredResult> results_of(int generation) const;
};
// Reads every run (newest first) and the "speedup" perf summary of perf runs.
GenerationMatrix load_generation_matrix(const Store& store);

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

signals:
    void run_activated(qint64 run_id);
    void loaded();

private:
    void update_plots();

    QString store_;
    GenerationMatrixModel* model_ = nullptr;
    QTableView* view_ = nullptr;
    QLabel* status_ = nullptr;
    QCustomPlot* fast_p_ = nullptr;
    QCustomPlot* geomean_ = nullptr;
};

} // namespace pkbw::app
