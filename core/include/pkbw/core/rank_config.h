// The rank program's configuration file, config.json in the run folder (docs/engine.md, "Rank program
// contract"): one struct, one writer (to_json, the launcher's) and one reader (parse_rank_config: the rank
// program's, strict; the workbench's, which only shows it). PKB's Python judge reads the same file.
#pragma once

#include "pkbw/core/problem.h"
#include "pkbw/core/status.h"

#include <nlohmann/json.hpp>
#include <string>

namespace pkbw {

struct RankConfig {
    int version = 1;
    long long run_id = 0;
    std::string problem;
    std::string mode = "eval"; // dryrun, eval, perf (eval then timing), calibrate (no problem)
    std::string backend = "host";
    int world_size = 1;
    std::int64_t m = 1024, n = 1024;
    DType dtype = DType::BF16;
    int trials = 5;
    std::uint64_t seed = 42;
    InputMode input_mode = InputMode::Pkb;
    double atol = kPkbTolerance, rtol = kPkbTolerance;
    bool all_trials = false;
    bool keep_outputs = false;
    bool keep_inputs = false; // write each trial's inputs too (for the PKB cross-check)
    std::string dryrun_side = "candidate";
    std::string reference_library;
    std::string candidate_library;
    std::string output_dir;
    bool perf = false;           // time after correctness: mode perf, or a "perf" object in the file
    nlohmann::json perf_options; // the "perf" object (perf_runner.h parses it)
    nlohmann::json extra;        // sections owned by later features (trace), passed through

    ProblemConfig problem_config(int trial) const;
    bool runs_reference() const {
        return mode != status::kModeCalibrate && (mode != status::kModeDryrun || dryrun_side == "reference");
    }
    bool runs_candidate() const {
        return mode != status::kModeCalibrate && (mode != status::kModeDryrun || dryrun_side == "candidate");
    }
};

// Throws pkbw::FormatError naming the file and the field. `for_rank_program`: the libraries the mode runs
// and the output folder must be given (false: a reader that only shows a run, a PKB run's config too).
RankConfig parse_rank_config(const nlohmann::json& json, const std::string& source,
                             bool for_rank_program = true);
RankConfig load_rank_config(const std::string& path);
// The file's JSON: `extra`'s sections (trace, pkb, ...) with every field above over them; the libraries
// only when set.
nlohmann::json to_json(const RankConfig& config);

} // namespace pkbw
