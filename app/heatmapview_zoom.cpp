// HeatmapView's zoom at element resolution: the maps of a whole tensor are pooled (a 4096² output
// shows 8×8 elements per cell), so a zoomed view is pooled again from the tensors for the region in
// view, through core's own pass on a view of that region, until single elements resolve. The hover
// readout, marks and tie bands keep the tensor's coordinates; Home or a double click goes back to
// the whole tensor's maps.
#include "background.h"
#include "heatmapview.h"

#include <QTimer>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

namespace pkbw::app {
namespace {

// A contiguous tensor's 2-D region [row0, row1) x [col0, col1) as a view of its storage (no copy).
Tensor region_of(const Tensor& tensor, const Grid2D& grid, const ViewRegion& r) {
    const Tensor whole = tensor.contiguous();
    const std::size_t offset = whole.byte_offset() + static_cast<std::size_t>(r.row0 * grid.cols + r.col0) *
                                                         dtype_size(whole.dtype());
    return Tensor::view(whole.storage(), whole.dtype(), {r.row1 - r.row0, r.col1 - r.col0}, {grid.cols, 1},
                        offset);
}

} // namespace

RegionMaps pool_region(const Tensor& ref, const Tensor& cand, double atol, double rtol,
                       const ViewRegion& region, int max_side) {
    const Grid2D grid = grid_of(ref.shape());
    RegionMaps out;
    out.region = region;
    const ErrorAnalysis e = analyse_error(region_of(ref, grid, region), region_of(cand, grid, region), atol,
                                          rtol, max_side, &out.ref, &out.cand);
    out.diff = e.diff;
    out.ratio = e.ratio;
    return out;
}

void HeatmapView::schedule_repool() {
    if (!filling_ && set_.has_values && set_.ref_tensor.defined()) {
        repool_timer_->start(); // once the wheel or drag settles
    }
}

ViewRegion HeatmapView::region_in_view() const {
    const PooledMap& whole = set_.error.ratio;
    const QCustomPlot* plot = plots_[3];
    ViewRegion r;
    r.col0 = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(plot->xAxis->range().lower)), 0,
                                      whole.source_cols);
    r.col1 = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(plot->xAxis->range().upper)), 0,
                                      whole.source_cols);
    r.row0 = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(plot->yAxis->range().lower)), 0,
                                      whole.source_rows);
    r.row1 = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(plot->yAxis->range().upper)), 0,
                                      whole.source_rows);
    return r;
}

void HeatmapView::repool() {
    const PooledMap& whole = set_.error.ratio;
    const ViewRegion r = region_in_view();
    const bool pooled = whole.cols < whole.source_cols || whole.rows < whole.source_rows;
    const bool whole_in_view =
        r.col0 == 0 && r.row0 == 0 && r.col1 == whole.source_cols && r.row1 == whole.source_rows;
    if (!zoomed_ || !pooled || whole_in_view || r.col1 <= r.col0 || r.row1 <= r.row0) {
        if (region_shown_) {
            show_whole_maps();
        }
        return;
    }
    const quint64 request = ++repool_request_;
    const int max_side = std::max(whole.rows, whole.cols); // the whole map's resolution, on the region
    run_in_background(
        this,
        [ref = set_.ref_tensor, cand = set_.cand_tensor, atol = set_.atol, rtol = set_.rtol, r, max_side] {
            return pool_region(ref, cand, atol, rtol, r, max_side);
        },
        [this, request](Loaded<RegionMaps> result) {
            if (request == repool_request_ && zoomed_ && result.ok()) {
                show_region(result.value);
            }
        });
}

void HeatmapView::show_region(const RegionMaps& maps) {
    const PooledMap* pooled[kMaps] = {&maps.ref, &maps.cand, &maps.diff, &maps.ratio};
    for (int i = 0; i < kMaps; ++i) {
        if (maps_[i]->visible()) {
            put_cells(maps_[i], *pooled[i], i == 3, static_cast<double>(maps.region.col0),
                      static_cast<double>(maps.region.row0));
            plots_[i]->replot(QCustomPlot::rpQueuedReplot);
        }
    }
    region_ = maps.region;
    region_shown_ = true;
}

void HeatmapView::show_whole_maps() {
    ++repool_request_; // a region still being pooled is no longer wanted
    const PooledMap* pooled[kMaps] = {&set_.ref, &set_.cand, &set_.error.diff, &set_.error.ratio};
    for (int i = 0; i < kMaps; ++i) {
        if (maps_[i]->visible()) {
            put_cells(maps_[i], *pooled[i], i == 3, 0, 0);
            plots_[i]->replot(QCustomPlot::rpQueuedReplot);
        }
    }
    region_shown_ = false;
}

} // namespace pkbw::app
