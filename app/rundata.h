// Everything the run, perf and source views show about one run, loaded in one go on a worker thread:
// from the store (a run id) or from a run folder alone (outputs compared here). Qt-free.
#pragma once

#include "pkbw/core/compare.h"
#include "pkbw/core/store.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::app {

struct RunData {
    RunRecord run;
    bool from_store = false;
    std::vector<RankResultRow> ranks;
    std::vector<TensorResultRow> tensors; // by trial, rank, name
    std::vector<PerfSample> samples;
    std::vector<PerfSummaryRow> summaries;
    std::vector<RunFlagRow> flags; // with the engine's severity (schema 8); empty for older runs
    std::vector<ArtifactRow> artifacts;
    // Parts of the run the store could not give (a damaged or missing table), each naming the part
    // and the store's error; the rest of the run is shown.
    std::vector<std::string> unreadable;

    int world_size() const;
    int trial_count() const;
    std::vector<const TensorResultRow*> tensors_of(int trial, int rank) const;
    const RankResultRow* rank_result(int trial, int rank, Side side) const;
    std::optional<double> summary(std::string_view statistic, Side side = Side::Candidate,
                                  int rank = -1) const;
};

// The outputs file a rank wrote in a trial (docs/engine.md: outputs/trial_<k>/rank_<r>_<side>.safetensors
// under the run directory), or an "outputs" artifact naming it.
std::filesystem::path output_path(const RunData& data, int trial, int rank, Side side);

RunData load_run(const std::filesystem::path& store, std::int64_t run_id);
// A run folder without a store: reads config.json when present and compares every trial's outputs
// found under outputs/ at the given tolerances (config.json's when absent).
RunData load_run_folder(const std::filesystem::path& folder);

// One rank-trial re-scored at other tolerances (the tolerance explorer).
struct Rescored {
    int trial = 0, rank = 0;
    bool pass = false;
    bool tie_explained = false; // failing, and every failing output's mismatches lie in its tie rows
    std::int64_t mismatch_count = 0;
    double worst_ratio = 0;
    double min_passing_atol = 0; // at the new rtol, over all tensors
    std::string first_error;
};
// Every (trial, rank) whose two outputs files exist; rows whose files cannot be read carry the error.
// The stored tie rows (issue 16) classify the re-scored mismatches as the run's comparison did.
std::vector<Rescored> rescore_outputs(const RunData& data, double atol, double rtol);

// Issue 16: the tie rows the run's comparison recorded for these outputs, by output name.
TieRowsByOutput stored_tie_rows(const std::vector<const TensorResultRow*>& tensors);
// At least one output failed and every failing one is tie-explained.
bool failures_tie_explained(const std::vector<const TensorResultRow*>& tensors);

} // namespace pkbw::app
