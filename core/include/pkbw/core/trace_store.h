// Per-rank traces in the run store (schema 2, resources/schema/002_traces.sql; docs/tracing.md).
// These use their own SQLite connection to store.path(): do not call them while a Store::Transaction
// is open on the same store (the write would wait for it and time out).
#pragma once

#include "pkbw/core/store.h"
#include "pkbw/core/trace.h"
#include "pkbw/core/trace_analysis.h"

#include <optional>
#include <vector>

namespace pkbw {

// Writes the traces of a run in one transaction, replacing what was stored for the same ranks.
// Throws StoreError naming the store (unknown run, read-only store, schema older than 2).
void store_run_traces(Store& store, std::int64_t run_id, const std::vector<RankTrace>& traces);

// The run's traced ranks, ascending.
std::vector<int> traced_ranks(const Store& store, std::int64_t run_id);

// Reads a run's traces (sorted by rank, events by time). `rank` keeps one rank; `window` keeps the
// events that overlap it. Every stored event is validated as when read from a file.
std::vector<RankTrace> load_run_traces(const Store& store, std::int64_t run_id,
                                       std::optional<int> rank = std::nullopt,
                                       std::optional<TimeWindow> window = std::nullopt);

// Removes a run's traces (deleting the run removes them too).
void delete_run_traces(Store& store, std::int64_t run_id);

} // namespace pkbw
