// What the judges saw of their candidate processes, turned into the run's verdict: the sandbox in
// force, processes left behind, the re-check after timing and the timing brackets
// (docs/engine.md "Process layout", docs/perf.md "What the timing cannot miss").
#pragma once

#include "run_report.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace pkbw::cli {

// `events`: every `candidate` and `recheck` event and every candidate-side `perf_result`, as the
// ranks sent them. Adds warnings to `verdict`; a perf run that passed becomes "invalid_timing"
// (exit 1) when a re-check failed or a timed block left work outside its measured time.
void apply_trust_findings(Verdict& verdict, const std::vector<nlohmann::json>& events);

} // namespace pkbw::cli
