// PKB's downloaded artifacts (run_local.py --download, pkb-harness.md §2.7): finding them in a logs
// folder, reading the per-rank perf JSON, and comparing reference and candidate outputs per trial and
// rank with pkbw's comparison. Plain structs for `pkbw import-pkb` to store; docs/pkb-interop.md.
//   dryrun: <logs>/problem_<stem>/<backend>/{rank_<r>.pt, rank_<r>_perf.json, traces/rank_<r>.json}
//   eval:   <logs>/problem_<stem>/{reference,<backend>}/trial_<k>/{the same files}
#pragma once

#include "pkbw/core/compare.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw {

// rank_<r>_perf.json (utils/performance.py). PKB writes every field as a float.
struct PkbPerf {
    double wall_time_ms = 0;       // mean per iteration: total / iterations
    double wall_time_total_ms = 0; // first to last event
    double wall_time_std_ms = 0;   // sample std (n - 1) of the per-iteration times
    double min_time_ms = 0, max_time_ms = 0;
    double iterations = 0, warmup_iterations = 0;
    double num_input_groups = 0, l2_cache_size_bytes = 0, timed_tensor_bytes = 0;
    nlohmann::json raw; // the whole object, unknown fields included
};

// wall_time_ms is required; the other fields are optional (0 when absent) but must be numbers.
PkbPerf parse_pkb_perf(std::string_view text, const std::string& source);
PkbPerf read_pkb_perf(const std::filesystem::path& path);

struct PkbRankFiles {
    int rank = 0;
    std::filesystem::path pt;                   // rank_<r>.pt (may be absent: empty path)
    std::optional<std::filesystem::path> perf;  // rank_<r>_perf.json
    std::optional<std::filesystem::path> trace; // traces/rank_<r>.json
};

// One job's files (one backend, one trial).
struct PkbJob {
    std::filesystem::path dir;
    std::vector<PkbRankFiles> ranks;   // by rank
    std::vector<std::string> pt_names; // every *.pt (relative, sorted): what PKB compares by name
};

struct PkbTrial {
    int trial = -1; // -1: a dryrun download (no trial_<k> level)
    std::optional<PkbJob> reference, candidate;
};

struct PkbRun {
    std::string problem_stem;      // "1_allreduce"
    std::optional<int> problem_id; // the stem's leading digits
    std::string backend;           // PKB's folder: "cuda", "triton", ... ("reference" for reference-only)
    bool eval = false;             // trial_<k> folders, else a dryrun download
    std::vector<PkbTrial> trials;  // by trial
    int world_size = 0;            // most ranks seen in any job
    std::filesystem::path problem_dir;
};

struct PkbLogs {
    std::filesystem::path root;
    std::vector<PkbRun> runs;          // by problem, then backend, dryrun before eval
    std::vector<std::string> warnings; // skipped folders and files, each naming its path
};

// Scans a logs folder (holding problem_<stem>/ folders) or one problem_<stem>/ folder. Throws
// pkbw::FormatError naming `dir` when it holds neither.
PkbLogs scan_pkb_logs(const std::filesystem::path& dir);

struct PkbRankComparison {
    int rank = 0;
    std::string load_error; // non-empty when either side's .pt could not be read
    OutputComparison comparison;
};

struct PkbTrialComparison {
    int trial = -1;
    // PKB's kinds (pkb-harness.md §6): "match", "tensor_mismatch", "path_mismatch", "load_error",
    // "missing_artifacts".
    std::string result;
    std::string first_error;              // in PKB's file order (names sorted as text)
    std::vector<PkbRankComparison> ranks; // every rank compared (PKB stops at the first failure)
    bool pass() const { return result == "match"; }
};

// Compares reference and candidate of one trial. Never throws on bad files: they become load_error.
PkbTrialComparison compare_pkb_trial(const PkbTrial& trial, const CompareOptions& options = {});

struct PkbSidePerf {
    std::vector<std::optional<PkbPerf>> ranks; // by rank index; nullopt when the file is missing
    std::optional<double> max_ms, mean_ms;     // over ranks' wall_time_ms (PKB's summarize_perf_artifacts)
    std::vector<std::string> errors;           // unreadable perf files, each naming its path
};

struct PkbTrialPerf {
    PkbSidePerf reference, candidate;
    std::optional<double> speedup; // reference max / candidate max, PKB's per-trial figure
};

PkbTrialPerf summarize_pkb_perf(const PkbTrial& trial);

} // namespace pkbw
