// What the judges saw of their candidate processes, turned into the run's verdict: the sandbox in
// force, processes left behind, the check of every timed call, the candidate's stillness while the
// reference was timed and its samples against the judge's clock (docs/engine.md "Process layout",
// docs/perf.md "What the timing cannot miss").
#pragma once

#include "run_report.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace pkbw::cli {

// `events`: every `candidate`, `timing_plan` and `timed_check` event and every pkbw `perf_result`, as
// the ranks sent them. Adds warnings to `verdict`; a perf run that passed becomes "invalid_timing"
// (exit 1) when a timed call failed its check, or the candidate ran or held the GPU while it should
// have been still.
void apply_trust_findings(Verdict& verdict, const std::vector<nlohmann::json>& events);

} // namespace pkbw::cli
