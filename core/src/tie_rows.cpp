#include "pkbw/core/tie_rows.h"

namespace pkbw {

namespace {
std::string plural(std::int64_t count, const char* one, const char* many) {
    return std::to_string(count) + " " + (count == 1 ? one : many);
}
} // namespace

std::string tie_report_text(const TieReport& report) {
    if (!report.classified || report.mismatched_elements == 0)
        return {};
    const std::int64_t named = static_cast<std::int64_t>(report.named.rows.size());
    const std::string rule = " (" + report.named.rule + ")";
    if (report.explained()) {
        const std::string elements =
            report.mismatched_elements == 1
                ? std::string("the 1 mismatched element is")
                : "all " + std::to_string(report.mismatched_elements) + " mismatched elements are";
        return "tie-explained: " + elements + " in " + std::to_string(report.mismatched_rows_in_tie_rows) +
               " of the " + plural(named, "tie row", "tie rows") + rule;
    }
    return "not tie-explained: " +
           plural(report.mismatched_rows_outside, "mismatched row is", "mismatched rows are") +
           " outside the " + plural(named, "tie row", "tie rows") + ", " +
           std::to_string(report.mismatched_rows_in_tie_rows) + " inside" + rule;
}

} // namespace pkbw
