// One run: its header, the rank x trial correctness grid, the outputs of the selected cell, their
// heatmaps, and the tolerance explorer. Loading (store queries, safetensors, pooling) happens on
// worker threads; the view only presents.
#pragma once

#include "rundata.h"

#include <QWidget>
#include <memory>

class QLabel;
class QTableView;
class QListWidget;
class QDoubleSpinBox;
class QTimer;

namespace pkbw::app {

class CorrectnessModel;
class HeatmapView;
class ToleranceModel;

// What the tolerance explorer says when no outputs file of the run is on disk: an imported PKB run's
// .pt files gone (its logs folder moved), a native run's folder gone, or none kept (--keep-outputs).
QString no_outputs_text(const RunData& data);

class RunView : public QWidget {
    Q_OBJECT
public:
    explicit RunView(QWidget* parent = nullptr);

    void set_store(const QString& path) { store_ = path; }
    void open_run(qint64 run_id);
    void open_folder(const QString& folder);
    void set_data(std::shared_ptr<const RunData> data);

    std::shared_ptr<const RunData> data() const { return data_; }
    CorrectnessModel* grid_model() const { return grid_model_; }
    ToleranceModel* tolerance_model() const { return tolerance_model_; }
    HeatmapView* heatmaps() const { return heatmaps_; }
    QTableView* grid_view() const { return grid_; }
    QString header_text() const;
    QString rescore_text() const;     // the tolerance explorer's summary line
    QString first_error_text() const; // the explorer's first error, of the current or first failing row
    QStringList tensor_names() const;

    void select_cell(int rank, int trial);
    void select_tensor(int row);
    void set_tolerances(double atol, double rtol);
    void rescore();

signals:
    void run_loaded(std::shared_ptr<const pkbw::app::RunData> data);
    void heatmaps_ready();
    void rescore_ready();
    void load_failed(const QString& message);

private:
    void load_heatmaps();
    void show_first_error(int row); // -1: the first failing row

    QString store_;
    std::shared_ptr<const RunData> data_;
    int rank_ = -1, trial_ = -1;
    QString tensor_;
    quint64 heatmap_request_ = 0, rescore_request_ = 0;

    QLabel* header_ = nullptr;
    QTableView* grid_ = nullptr;
    CorrectnessModel* grid_model_ = nullptr;
    QListWidget* tensors_ = nullptr;
    HeatmapView* heatmaps_ = nullptr;
    QDoubleSpinBox* atol_ = nullptr;
    QDoubleSpinBox* rtol_ = nullptr;
    QLabel* rescore_summary_ = nullptr;
    QLabel* tolerance_error_ = nullptr;
    ToleranceModel* tolerance_model_ = nullptr;
    QTimer* rescore_timer_ = nullptr;
};

} // namespace pkbw::app
