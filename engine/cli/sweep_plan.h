// Which (generation, problem) pairs a sweep runs: every solution file of every generation folder,
// placed at a problem by its name, never by its number alone. PKB's historic generation folders
// number problems 33-87 one higher than PKB's HEAD does, and some problems were renamed or removed,
// so the number in a file name is only a hint (docs/sweeps.md "Placing solutions").
#pragma once

#include "pkbw/core/sweep_store.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::cli {

struct KnownProblem {
    int id = 0;
    std::string stem; // "33_ulysses_all_to_all_tensor_primitive"
};

// The problems a sweep can place files at: pkbw's own, or a PKB checkout's reference/<stem>.py.
std::vector<KnownProblem> native_problems();
std::vector<KnownProblem> pkb_checkout_problems(const std::filesystem::path& checkout);

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

// The name part of a problem stem or of a solution file's stem: "33_ulysses_x" -> "ulysses_x".
std::string name_without_number(const std::string& stem);

} // namespace pkbw::cli
