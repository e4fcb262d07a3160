// Which (generation, problem) pairs a sweep runs: every solution file of every generation folder,
// placed at a problem by the name rules of solution_names.h (docs/sweeps.md "Placing solutions").
#pragma once

#include "pkbw/core/sweep_store.h"
#include "solution_names.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pkbw::cli {

// "all", "1-87", "1,3,5-8" over the known ids. Throws pkbw::Error on text it cannot read or an id
// that is not a known problem.
std::vector<int> parse_problem_selection(const std::string& text, const std::vector<KnownProblem>& known);

struct UnplacedFile {
    std::string generation_label;
    std::string file;
    std::string reason;
};

struct SweepPlan {
    std::vector<SweepPair> pairs; // in run order: generation by generation, problems ascending
    std::vector<UnplacedFile> unplaced;
    // Unplaced files that concern no selected problem (their number is not selected and their reason
    // names no selected problem): with --problems 1-2, 18_rms_norm_cuda.py is not the user's concern
    // here. Counted and kept (--json lists them), not printed line by line.
    std::vector<UnplacedFile> unplaced_elsewhere;
    // {"<generation>": {"<file name>": {"problem": stem, "placed_by": "name" | "name tokens",
    //                   "renumbered": bool}}, ...}: the mapping used, stored in the sweep's options.
    nlohmann::json mapping = nlohmann::json::object();
    // Selected problems without a file, per generation (not run, not counted as attempted).
    nlohmann::json missing = nlohmann::json::object();
};

// `extension`: ".cu", ".cpp" or ".py": the files the backend runs. Files of the other solution
// extensions are reported as unplaced; anything else (README, __init__.py) is ignored.
// `by_hand`: file name -> problem (number or stem), the user's placement of files the rules leave
// unplaced (--place FILE=PROBLEM); it wins over the rules. Throws pkbw::Error on an unknown problem.
SweepPlan plan_sweep(const std::vector<std::filesystem::path>& generation_dirs,
                     const std::vector<KnownProblem>& known, const std::vector<int>& selected,
                     const std::string& extension, const std::map<std::string, std::string>& by_hand = {});

} // namespace pkbw::cli
