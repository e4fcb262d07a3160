// Sweeps in the run store (schema 3, resources/schema/003_sweeps.sql; docs/sweeps.md): a batch of runs
// over (generation, problem) pairs. Like the trace tables these use a connection of their own on
// store.path(): do not call them while a Store::Transaction is open on the same store.
#pragma once

#include "pkbw/core/store.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

// A sweep's status in the store (`sweeps.status`), the words pkbw writes and the GUI reads: running (on
// this machine), submitted (to a queue), done, incomplete (pairs left, resume it), interrupted.
namespace sweep_status {
inline constexpr const char* kRunning = "running";
inline constexpr const char* kSubmitted = "submitted";
inline constexpr const char* kDone = "done";
inline constexpr const char* kIncomplete = "incomplete";
inline constexpr const char* kInterrupted = "interrupted";
} // namespace sweep_status

// A pair's state (`sweep_pairs.state`): pending (not judged yet), done (its run has a verdict), failed
// (pkbw ended without recording a run).
namespace pair_state {
inline constexpr const char* kPending = "pending";
inline constexpr const char* kDone = "done";
inline constexpr const char* kFailed = "failed";
} // namespace pair_state

struct SweepRecord {
    std::int64_t id = 0;
    std::string uuid; // "" = create_sweep draws one
    std::string name;
    std::string mode = "eval";
    std::string backend;
    int world_size = 1;
    nlohmann::json options = nlohmann::json::object();
    std::string created_at, updated_at; // "" = now
    std::string status = sweep_status::kRunning;
};

struct SweepPair {
    std::string generation_label;
    std::string problem_stem;
    std::optional<int> problem_id;
    std::string solution_path;
    std::string placed_by = "name";
    int position = 0;
    std::optional<std::int64_t> run_id;
    std::string state = pair_state::kPending;
    std::string message;
    std::optional<double> seconds;
};

// Inserts the sweep and its pairs in one transaction; returns the sweep id.
std::int64_t create_sweep(Store& store, SweepRecord sweep, const std::vector<SweepPair>& pairs);
std::optional<SweepRecord> find_sweep(const Store& store, std::int64_t sweep_id);
// The newest sweep of that name.
std::optional<SweepRecord> find_sweep_by_name(const Store& store, const std::string& name);
std::optional<SweepRecord> find_sweep_by_uuid(const Store& store, const std::string& uuid);
std::vector<SweepRecord> list_sweeps(const Store& store);                      // newest first
std::vector<SweepPair> sweep_pairs(const Store& store, std::int64_t sweep_id); // by position
// Records the outcome of one pair (and touches the sweep's updated_at).
void record_sweep_pair(Store& store, std::int64_t sweep_id, const SweepPair& pair);
void set_sweep_status(Store& store, std::int64_t sweep_id, const std::string& status);

// A pair is done when its run finished with a verdict: not running, interrupted or aborted.
bool sweep_run_status_is_final(RunStatus status);

} // namespace pkbw
