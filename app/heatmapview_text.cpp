// HeatmapView's words: the summary above the maps (mismatches, worst and first with their own values,
// max |diff|, masked cells, pooling, tie rows, the colour scale) and the hover readout of one element.
#include "heatmapview.h"
#include "qtconvert.h"

#include <QLabel>
#include <cmath>
#include <qcustomplot.h>

namespace pkbw::app {
namespace {

QString number(double v) {
    return QString::number(v, 'g', 7);
}

} // namespace

QString HeatmapView::readout_at(std::int64_t row, std::int64_t col) const {
    const PooledMap& m = set_.error.ratio;
    if (row < 0 || col < 0 || row >= m.source_rows || col >= m.source_cols) {
        return {};
    }
    const std::int64_t index = row * m.source_cols + col;
    QString text = tr("[%1, %2] (element %3)").arg(row).arg(col).arg(index);
    if (set_.ref_tensor.defined() && set_.cand_tensor.defined() && index < set_.ref_tensor.numel()) {
        const float ref = set_.ref_tensor.get_f32(index), cand = set_.cand_tensor.get_f32(index);
        const float diff = cand - ref;
        // The ratio as core's rule computes it in f32 (docs/gui.md): |ref - cand| / (atol + rtol |cand|).
        const float allowed = static_cast<float>(set_.atol) + static_cast<float>(set_.rtol) * std::fabs(cand);
        const float ratio = ref == cand ? 0.0f : std::fabs(ref - cand) / allowed;
        text += tr(": reference %1, candidate %2, difference %3, ratio %4")
                    .arg(number(ref), number(cand), number(diff), format_ratio(ratio));
        return text;
    }
    const CellPos p = locate(m, index);
    if (!m.values.empty()) {
        const float v = m.at(p.map_row, p.map_col);
        text += tr(": cell ratio %1 (stored error map; the values need the outputs files)")
                    .arg(std::isnan(v) ? QStringLiteral("inf") : format_ratio(v));
    }
    return text;
}

QString HeatmapView::summary_text() const {
    const ErrorAnalysis& e = set_.error;
    const QString lengths = format_lengths(set_.length_bound, set_.ref_length, set_.cand_length);
    if (set_.length_bound && set_.ref_length != set_.cand_length) {
        // Nothing was compared: the lengths alone are the verdict.
        return tr("<b>%1</b>: %2").arg(to_qstring(set_.title).toHtmlEscaped(), lengths.toHtmlEscaped());
    }
    if (e.ratio.source_cols == 0 && e.numel == 0) {
        return {};
    }
    auto where = [&](std::int64_t index) {
        const CellPos p = locate(e.ratio, index);
        return QStringLiteral("[%1, %2]").arg(p.row).arg(p.col);
    };
    QString text = tr("<b>%1</b>%2 at atol %3, rtol %4: ")
                       .arg(to_qstring(set_.title).toHtmlEscaped(),
                            lengths.isEmpty() ? QString() : tr(" (valid prefix: %1)").arg(lengths))
                       .arg(set_.atol)
                       .arg(set_.rtol);
    const double pct =
        e.numel > 0 ? 100.0 * static_cast<double>(e.mismatch_count) / static_cast<double>(e.numel) : 0;
    text += tr("%1 of %2 elements mismatch (%3%), worst ratio %4")
                .arg(e.mismatch_count)
                .arg(e.numel)
                .arg(QString::number(pct, 'g', 3))
                .arg(format_ratio(e.worst_ratio));
    if (e.worst_mismatch >= 0) {
        // Each index with its own values, so that the worst's values never read as the first's.
        auto values_at = [this](std::int64_t index) {
            if (!set_.ref_tensor.defined() || index < 0 || index >= set_.ref_tensor.numel()) {
                return QString();
            }
            return tr(" (reference %1, candidate %2)")
                .arg(number(set_.ref_tensor.get_f32(index)), number(set_.cand_tensor.get_f32(index)));
        };
        text += tr(", worst at %1%2, first at %3%4")
                    .arg(where(e.worst_mismatch), values_at(e.worst_mismatch), where(e.first_mismatch),
                         values_at(e.first_mismatch));
    }
    if (set_.has_values && e.max_diff_index >= 0) {
        text += tr("; max |diff| %1 at %2").arg(number(e.max_abs_diff), where(e.max_diff_index));
        if (e.nonfinite_diffs > 0) {
            text += tr(" (finite differences; %1 non-finite)").arg(e.nonfinite_diffs);
        }
    }
    if (e.ratio.masked_elements > 0 || set_.ref.masked_elements > 0 || set_.cand.masked_elements > 0) {
        text += tr("; NaN/Inf masked (magenta): ratio %1, reference %2, candidate %3")
                    .arg(e.ratio.masked_elements)
                    .arg(set_.ref.masked_elements)
                    .arg(set_.cand.masked_elements);
    }
    if (e.ratio.rows > 0 && (e.ratio.rows < e.ratio.source_rows || e.ratio.cols < e.ratio.source_cols)) {
        text += tr("; %1×%2 shown as %3×%4 (max-pooled; a zoom pools the region in view again, down to "
                   "single elements)")
                    .arg(e.ratio.source_rows)
                    .arg(e.ratio.source_cols)
                    .arg(e.ratio.rows)
                    .arg(e.ratio.cols);
    }
    text += scale_note_;
    if (set_.ties) {
        const TieReport& t = *set_.ties;
        const QString verdict = tie_text(t);
        text += tr("<br><span style=\"color:%1\">%2 tie row(s) (violet bands%3): %4</span>")
                    .arg(tie_explained_color().name())
                    .arg(t.named.rows.size())
                    .arg(bands_truncated_ ? tr(", the first %1 runs drawn").arg(bands_.size()) : QString())
                    .arg(to_qstring(t.named.rule).toHtmlEscaped());
        if (!verdict.isEmpty()) {
            text +=
                tr("<br><b style=\"color:%1\">%2</b>%3")
                    .arg(tie_explained_color().name(), verdict.toHtmlEscaped(),
                         t.explained() ? tr(" — still a failure: the judge does not pass it") : QString());
        }
    }
    if (!set_.has_values) {
        text += tr("; outputs files not found: stored error map only");
    }
    return text;
}

} // namespace pkbw::app
