// Heatmaps of one output tensor: reference and candidate on one shared colour range (equal values
// look equal), the signed difference candidate - reference, and the error ratio |ref - cand| /
// (atol + rtol |cand|) (log colour scale, > 1 fails); NaN/Inf cells masked, the first and worst
// mismatch marked on all four, zoom linked with the aspect kept, a hover readout of the element under
// the cursor, and the ratio histogram below. The rows a problem named as tie rows (issue 16) are violet
// bands on every map, and the summary says whether the mismatch is tie-explained.
#pragma once

#include "pkbw/core/store.h"
#include "tensormaps.h"

#include <QSharedPointer>
#include <QWidget>
#include <optional>
#include <vector>

class QCustomPlot;
class QCPColorMap;
class QCPGraph;
class QCPBars;
class QLabel;
class QMouseEvent;
class QCPTextElement;
class QCPAbstractItem;
class QComboBox;
class QTimer;
class QCPAxisTicker;

namespace pkbw::app {

struct HeatmapSet {
    std::string title;
    bool has_values = false; // false when only the stored error map is known (no outputs files)
    PooledMap ref, cand;     // the signed difference map is error.diff (empty without values)
    ErrorAnalysis error;
    double atol = 0, rtol = 0;
    // The tensors themselves (shared storage, usually a mapped file) for the hover readout and the
    // worst element's values; undefined when only the stored error map is known.
    Tensor ref_tensor, cand_tensor;
    // Issue 16: the output's tie rows and how the mismatches lie in them, when the problem named any;
    // `shape` (the tensor's) maps its dim-0 rows onto the 2-D view.
    std::optional<TieReport> ties;
    Shape shape;
    // A variable-length output: the maps cover the valid prefix only; the bound and both sides' lengths.
    std::optional<std::int64_t> length_bound, ref_length, cand_length;
};

// A rectangle of the 2-D view (source rows and columns, end exclusive) covering tie rows.
struct TieBand {
    double col0 = 0, col1 = 0, row0 = 0, row1 = 0;
};
// The tie rows of `ties` on the 2-D view of a tensor of `shape` (leading dimensions folded into rows):
// a dim-0 row of an N-d tensor (N >= 2) is a band of whole view rows, an element of a 1-D tensor a
// column of its single view row, a 0-dim tensor's one cell. Consecutive rows merge into one band; at
// most `max_bands` are returned (*truncated says whether more existed).
std::vector<TieBand> tie_bands(const TieRows& ties, const Shape& shape, std::size_t max_bands,
                               bool* truncated = nullptr);

// The shared value range of the two value maps: [min, max] of their finite cells when all are of one
// sign (a sequential scale), else symmetric about 0; widened when constant. {0, 0} when empty.
std::pair<double, double> shared_value_range(const PooledMap& a, const PooledMap& b, bool* diverging);

// Pools both tensors and the ratio (max_side cells per side at most).
HeatmapSet compute_heatmaps(const Tensor& ref, const Tensor& cand, double atol, double rtol,
                            int max_side = 512);
// From a stored comparison alone: the ratio map only.
HeatmapSet heatmaps_from_row(const TensorResultRow& row, double atol, double rtol);

// A colour range for the value maps (heatmapview_scale.cpp).
struct ValueScale {
    double lo = 0, hi = 0;
    bool diverging = false;        // both signs: a polar map symmetric about 0
    bool clipped = false;          // the robust range, narrower than the full one
    double saturated_fraction = 0; // of the finite cells, beyond the range
};
// The 1st-99th percentile of both maps' finite cells (± the 99th percentile of |v| when both signs
// occur); the full range when the cells are too alike to narrow it.
ValueScale robust_value_range(const PooledMap& a, const PooledMap& b);
// Whether the largest finite magnitude is far beyond the 99th percentile's (auto then clips).
bool heavy_tailed(const PooledMap& a, const PooledMap& b);

// Symmetric-log colours (heatmapview_scale.cpp): linear within ±c, logarithmic beyond, so that values
// spanning decades show their typical elements and their tails at once:
// symlog(v, c) = sign(v) · log10(1 + |v| / c), and symlog_inverse its inverse.
double symlog(double v, double c);
double symlog_inverse(double y, double c);
// c for the maps' finite cells: the 10th percentile of their nonzero magnitudes rounded down to a
// power of ten (ticks then read 0, ±c, ±10c, ...); 0 when every finite cell is 0 (linear colours).
double symlog_threshold(std::initializer_list<const PooledMap*> maps);
// The values a symlog colour scale over [lo, hi] labels: 0 when in range and ±c·10^k, every decade
// or every n-th one so that at most `max_ticks` remain.
std::vector<double> symlog_ticks(double lo, double hi, double c, int max_ticks);

// A region of a tensor's 2-D view, rows and columns end exclusive.
struct ViewRegion {
    std::int64_t row0 = 0, row1 = 0, col0 = 0, col1 = 0;
};
// The four maps of a region, pooled from the tensors by core's pass (max_side cells per side at
// most): a zoomed view resolves what the whole tensor's maps pool away.
struct RegionMaps {
    ViewRegion region;
    PooledMap ref, cand, diff, ratio;
};
RegionMaps pool_region(const Tensor& ref, const Tensor& cand, double atol, double rtol,
                       const ViewRegion& region, int max_side);

class HeatmapView : public QWidget {
    Q_OBJECT
public:
    explicit HeatmapView(QWidget* parent = nullptr);

    void show_set(const HeatmapSet& set);
    void clear(const QString& message = {});

    QString summary_text() const;
    // What the hover readout says for source element (row, col): index, reference, candidate,
    // difference and ratio (the cell's pooled ratio when only the stored error map is known).
    QString readout_at(std::int64_t row, std::int64_t col) const;
    QString readout_text() const;
    // The value range both value maps are drawn with (tests), in the colour scale's coordinates
    // (symlog's when the symlog scale is chosen).
    QPair<double, double> value_range() const;
    // Symlog's linear threshold c of map 0-2 (reference, candidate, difference); 0: linear colours.
    double symlog_threshold_of(int map) const { return map >= 0 && map < 3 ? symlog_c_[map] : 0; }
    bool values_shown() const;
    // Whether the error-ratio map and histogram are shown (hidden until a set arrives).
    bool ratio_shown() const;
    const HeatmapSet& current() const { return set_; }
    QList<QCustomPlot*> plots() const;
    // Back to the whole tensor in every map (Home, or a double click on a map); until then a wheel
    // or drag keeps the user's view across resizes.
    void reset_view();
    bool zoomed() const { return zoomed_; }
    // Whether the maps show a zoomed region pooled again from the tensors (heatmapview_zoom.cpp),
    // and which.
    bool region_shown() const { return region_shown_; }
    ViewRegion shown_region() const { return region_; }
    // The tie-row bands drawn on each map (tests).
    int tie_band_count() const { return static_cast<int>(bands_.size()); }

private:
    QCustomPlot* make_map_plot(const QString& title, QCPColorMap** map, QCPGraph** first, QCPGraph** worst);
    void fill(QCustomPlot* plot, QCPColorMap* map, const PooledMap& pooled, bool ratio);
    // A value or difference map's cells go in as symlog(v, c) when its symlog threshold c is set.
    void put_cells(QCPColorMap* map, const PooledMap& pooled, bool ratio, double col0, double row0);
    void schedule_repool();
    ViewRegion region_in_view() const;
    void repool();
    void show_region(const RegionMaps& maps);
    void show_whole_maps();
    void apply_value_scales();
    void apply_symlog(bool chosen); // heatmapview_scale.cpp
    void use_symlog_ticks(int map, bool symlog);
    static void set_value_gradient(QCPColorMap* map, bool diverging);
    void place_marks(QCPGraph* first, QCPGraph* worst, const PooledMap& pooled);
    void place_tie_bands();
    void fit_aspect(QCustomPlot* plot);
    void link_ranges(QCustomPlot* from);
    void hover(QCustomPlot* plot, QMouseEvent* event);

    static constexpr int kMaps = 4; // reference, candidate, difference, ratio
    HeatmapSet set_;
    QLabel* summary_ = nullptr;
    QLabel* readout_ = nullptr;
    QCustomPlot* plots_[kMaps]{};
    QCPColorMap* maps_[kMaps]{};
    QCPGraph* first_marks_[kMaps]{};
    QCPGraph* worst_marks_[kMaps]{};
    std::vector<TieBand> bands_;
    bool bands_truncated_ = false;
    QList<QCPAbstractItem*> band_items_[kMaps];
    bool linking_ = false;
    bool zoomed_ = false;  // the user zoomed or panned: resizes keep the view
    bool filling_ = false; // show_set is setting the maps' own ranges
    bool fit_pending_[kMaps]{};
    QComboBox* scale_ = nullptr; // auto, full range, robust, symlog
    double symlog_c_[3]{};       // per value / difference map: symlog's c, 0 for linear colours
    QSharedPointer<QCPAxisTicker>
        fitting_tickers_[3]; // their colour scales' own, while symlog's replace them
    QString scale_note_;     // what the summary says of a clipped scale
    QTimer* repool_timer_ = nullptr;
    quint64 repool_request_ = 0;
    bool region_shown_ = false;
    ViewRegion region_;
    QCustomPlot* histogram_ = nullptr;
    QCPBars* bars_ = nullptr;
    QCPTextElement* histogram_title_ = nullptr;
};

} // namespace pkbw::app
