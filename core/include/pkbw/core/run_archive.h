// What a run ran and said, read back for the GUI and the CLI: the sources it compiled or loaded, every
// compile diagnostic, and the compile and rank logs. They are archived in the store when the run is
// recorded (Store::archive_run_file, schema 5); a run recorded before that falls back to the files
// its paths name, checked against the hash the run recorded. docs/store.md "Archived files".
#pragma once

#include "pkbw/core/outputs.h"
#include "pkbw/core/store.h"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

// One file of a run. `origin` says where the text came from: "archived" (the store) or the path it
// was read from (older runs). `intact` is false when the text is not what ran: a damaged blob, or a
// file on disk whose SHA-256 differs from the one recorded; `problem` then says which.
struct RunFileText {
    std::string role; // file_role::kCandidateSource, ...
    std::string name; // the path as the run saw it
    std::optional<int> trial, rank;
    std::string sha256;
    std::string text;
    std::string origin;
    bool found = false;
    bool intact = false;
    std::string problem;
};

// The candidate's and the reference's sources that ran (candidate first). For PKB runs (backend
// pkb-python or a config.json with "pkb") the reference is PKB's Python file, never pkbw's .cu.
std::vector<RunFileText> run_sources(const Store& store, std::int64_t run_id);

// Every compile diagnostic of the run, both sides, in the compiler's order.
struct RunDiagnostic {
    std::string side; // "reference" or "candidate"
    std::string file;
    int line = 0, column = 0;
    std::string severity, message;
};
std::vector<RunDiagnostic> run_diagnostics(const Store& store, std::int64_t run_id);

// Compile logs (by side), then rank logs (by rank), then the run's config.json.
std::vector<RunFileText> run_logs(const Store& store, std::int64_t run_id);

// A rank's outputs of one trial and side, as the heatmaps and the tolerance explorer load them: the
// artifact of kind outputs_<side> ("outputs_reference" / "outputs_candidate": native runs'
// safetensors, imported PKB runs' .pt), else the native layout under the run folder
// (outputs/trial_<k>/rank_<r>_<side>.safetensors). Empty when none exists on disk.
std::filesystem::path find_output_file(const Store& store, std::int64_t run_id, int trial, int rank,
                                       Side side);
// Reads either format by its extension (.pt: torch_pt.h, never unpickling code; else safetensors).
// Throws pkbw::Error naming the file.
OutputSet read_output_file(const std::filesystem::path& path);

// Writers. Reads `path` (at most kMaxArchivedBytes: a longer file keeps its first and last halves
// around a line saying how much was left out) and archives it for the run. Returns the hash, or ""
// when the file cannot be read (nothing is archived then).
inline constexpr std::size_t kMaxArchivedBytes = 8u << 20;
std::string archive_file(Store& store, std::int64_t run_id, std::string_view role,
                         const std::filesystem::path& path, std::optional<int> trial = std::nullopt,
                         std::optional<int> rank = std::nullopt);
// The diagnostics of one compile, as the JSON list run_diagnostics reads.
std::string diagnostics_json(const std::vector<RunDiagnostic>& diagnostics);

} // namespace pkbw
