// The one place where core's types become Qt's: strings, paths, statuses and their colours, times.
#pragma once

#include "pkbw/core/store.h"
#include "pkbw/core/sweep_table.h"

#include <QColor>
#include <QDateTime>
#include <QString>
#include <QStringList>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw::app {

QString to_qstring(std::string_view text);
std::string to_std(const QString& text);
std::filesystem::path to_path(const QString& path);
QString path_to_qstring(const std::filesystem::path& path);

QString status_text(RunStatus status);
QString mode_text(RunMode mode);
QString outcome_text(RankOutcome outcome);
// Text colour for a status, readable on both themes.
QColor status_color(RunStatus status);
bool is_failure(RunStatus status);

// "2026-07-01T12:34:56.789Z" -> local time; invalid QDateTime for "".
QDateTime to_datetime(std::string_view iso8601);
QString format_time(std::string_view iso8601); // "2026-07-01 14:34:56" (local)

// A ratio as the views print it: "0.031", "2.4e+03", "inf".
QString format_ratio(double ratio);
// format_ratio in at most about six characters for a grid cell: 1000 and above as "8.3e4" (the full
// figure belongs in the tooltip).
QString format_ratio_compact(double ratio);
QString format_shape(const Shape& shape);
// A variable-length output's lengths (docs/solution-abi.md): "" for a fixed-shape output (no bound),
// "1039 of 4096 rows" when both sides agree, "length 1056, the reference's 1039 (bound 4096)" when not.
QString format_lengths(std::optional<std::int64_t> bound, std::optional<std::int64_t> ref_length,
                       std::optional<std::int64_t> cand_length);
// A speedup as lists and matrices show it: the number (`decimals` places) and "×", then the stored
// verdict's word when there is one: "1.31× faster", "1.12× ambiguous"; "2.00×" without a verdict.
QString speedup_text(double speedup, std::optional<Verdict> verdict, int decimals = 2);
QString verdict_text(Verdict verdict); // "faster", "slower", "same", "ambiguous"
// A speedup as a result in a table cell, always with its verdict and interval, compactly:
// "1.131× ambiguous [0.850–1.415]"; a PKB disagreement in direction appended as " ≠ PKB 0.692×".
QString result_speedup_text(const PairOutcome& pair, int decimals = 3);
// The same figures said in a sentence for tooltips: interval, verdict, PKB's figure and whether the
// pair counts toward fast_1 (and why not).
QString result_speedup_tooltip(const PairOutcome& pair);
// The cell of a run whose speedup is withheld (speedup_is_result false): core's speedup_withheld_word,
// "untrusted" for invalid_timing, "withheld" otherwise, as `pkbw runs` prints it.
QString withheld_speedup_text(RunStatus status);
// Its tooltip: why, and the stored figures "for inspection" when there are any.
QString withheld_speedup_tooltip(RunStatus status, std::optional<double> speedup,
                                 std::optional<double> ci_low, std::optional<double> ci_high);

// Colour of a correctness cell: pass shades from green (exact) to yellow (at the tolerance), fail from
// orange to deep red as log10(ratio) grows, grey when not run.
QColor ratio_color(bool pass, double worst_ratio);
QColor not_run_color();
// A failing verdict confined to tie rows (issue 16: tie-explained, still a failure): violet, a hue no
// other verdict uses, with the text of core's tie_report_text.
QColor tie_explained_color();
QString tie_text(const TieReport& report);
// Black or white, whichever reads better on `background` (the dark reds of failing cells need white).
QColor text_color_on(const QColor& background);

// A sweep's table row as `pkbw show --sweep` prints it (engine/sweep/sweep_report.cpp): generation,
// attempted, correct, faster ("-" for eval), fast_p per p ("%.2f"; "-" past p = 0 in eval), geomean
// ("%.3f" or "-"), failures ("kind n, ..." or "-").
QStringList sweep_row_cells(const SweepGenerationRow& row, bool perf, const std::vector<double>& ps);
QStringList sweep_header_cells(const std::vector<double>& ps);

} // namespace pkbw::app
