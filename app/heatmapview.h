// Heatmaps of one output tensor: reference, candidate and the error ratio |ref - cand| /
// (atol + rtol |cand|) (log colour scale, > 1 fails), NaN/Inf cells masked, the first and worst
// mismatch marked on all three, and the ratio histogram below.
#pragma once

#include "pkbw/core/store.h"
#include "tensormaps.h"

#include <QWidget>

class QCustomPlot;
class QCPColorMap;
class QCPGraph;
class QCPBars;
class QLabel;

namespace pkbw::app {

struct HeatmapSet {
    std::string title;
    bool has_values = false; // false when only the stored error map is known (no outputs files)
    PooledMap ref, cand;
    ErrorAnalysis error;
    double atol = 0, rtol = 0;
};

// Pools both tensors and the ratio (max_side cells per side at most).
HeatmapSet compute_heatmaps(const Tensor& ref, const Tensor& cand, double atol, double rtol,
                            int max_side = 512);
// From a stored comparison alone: the ratio map only.
HeatmapSet heatmaps_from_row(const TensorResultRow& row, double atol, double rtol);

class HeatmapView : public QWidget {
    Q_OBJECT
public:
    explicit HeatmapView(QWidget* parent = nullptr);

    void show_set(const HeatmapSet& set);
    void clear(const QString& message = {});

    QString summary_text() const;
    const HeatmapSet& current() const { return set_; }
    QList<QCustomPlot*> plots() const;

private:
    QCustomPlot* make_map_plot(const QString& title, QCPColorMap** map, QCPGraph** first, QCPGraph** worst);
    void fill(QCustomPlot* plot, QCPColorMap* map, const PooledMap& pooled, bool ratio);
    void place_marks(QCPGraph* first, QCPGraph* worst, const PooledMap& pooled);

    HeatmapSet set_;
    QLabel* summary_ = nullptr;
    QCustomPlot* plots_[3]{};
    QCPColorMap* maps_[3]{};
    QCPGraph* first_marks_[3]{};
    QCPGraph* worst_marks_[3]{};
    QCustomPlot* histogram_ = nullptr;
    QCPBars* bars_ = nullptr;
};

} // namespace pkbw::app
