// Exports of per-rank traces: the Chrome Trace Event Format (chrome://tracing, Perfetto) and a CSV
// kernel summary. Layout and units in docs/tracing.md ("Chrome trace").
#pragma once

#include "pkbw/core/trace.h"
#include "pkbw/core/trace_analysis.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pkbw {

// {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}: pid = rank, one thread per
// (device, stream) lane, one for engine ranges and one per host thread's NVTX events; complete ("X")
// events with ts/dur in microseconds relative to the earliest event; marks as instant ("i") events.
// Slices that would overlap partially on one thread are moved to an extra lane ("stream 7 #2").
nlohmann::json chrome_trace_json(const std::vector<RankTrace>& traces);

// Writes chrome_trace_json to `path`. Throws Error naming the path on failure.
void export_chrome_trace(const std::vector<RankTrace>& traces, const std::filesystem::path& path);

// CSV (RFC 4180 quoting): name,count,total_ns,mean_ns,p95_ns,min_ns,max_ns, one row per kernel.
std::string kernel_summary_csv(const std::vector<KernelStats>& stats);
void export_kernel_summary_csv(const std::vector<RankTrace>& traces, const std::filesystem::path& path);

} // namespace pkbw
