// `pkbw export RUN --format chrome-trace|csv --output FILE`: a run's stored traces as a Chrome trace
// (chrome://tracing, Perfetto) or a kernel summary CSV (docs/tracing.md, "Exports").
#pragma once

#include <string>

namespace pkbw::cli {

// Loads run `run_id`'s traces from the store at `store_path` (read-only) and writes `output` ("-" for
// stdout). Returns the exit code: 0 written; 1 the run or its traces are missing, or the store or the
// output failed; 2 an unknown format. Messages go to stderr.
int run_export_command(const std::string& store_path, long long run_id, const std::string& format,
                       const std::string& output);

} // namespace pkbw::cli
