// Which problem a solution file is for, by its name, never by its number alone: the rules that place a
// sweep's files (sweep_plan.h) and a single run's (--solutions-dir, a --solution path that names another
// problem). PKB's historic generation folders number problems 33-87 one higher than PKB's HEAD does,
// and some problems were renamed or removed, so the number in a file name is only a hint
// (docs/sweeps.md "Placing solutions").
#pragma once

#include <filesystem>
#include <map>
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

// The name part of a problem stem or of a solution file's stem: "33_ulysses_x" -> "ulysses_x".
std::string name_without_number(const std::string& stem);

// The name rule itself, shared by sweeps (plan_sweep) and single runs (find_solution_file,
// file_names_other_problem): where a file numbered `number` whose name is `problem_name` (its stem
// without the number and the backend word) belongs. docs/sweeps.md "Placing solutions at problems".
struct NamePlacement {
    const KnownProblem* problem = nullptr; // null: not placed, `reason` says why
    std::string placed_by;                 // "name" | "name tokens"
    std::string reason;
    // Not placed because the name is one problem's and the number another's with the same words.
    const KnownProblem* named = nullptr;
    const KnownProblem* numbered = nullptr;
};

class ProblemNames {
public:
    // `known` must outlive this index (placements point into it).
    explicit ProblemNames(const std::vector<KnownProblem>& known);
    NamePlacement place(int number, const std::string& problem_name) const;
    // --place's PROBLEM: a number or a stem; null when no known problem is that.
    const KnownProblem* find(const std::string& number_or_stem) const;
    const KnownProblem* by_stem(const std::string& stem) const;

private:
    const std::vector<KnownProblem>& known_;
    std::map<std::string, const KnownProblem*> by_name_;
    std::map<int, const KnownProblem*> by_id_;
};

// One folder's files placed at problems: the rule per file, `by_hand` first, then one file per
// problem (of several claims, the one whose number is the problem's, if just one).
struct PlacedFile {
    std::filesystem::path file;
    std::string placed_by; // "name" | "name tokens" | "by hand"
    bool renumbered = false;
};
struct FolderPlacement {
    std::map<std::string, PlacedFile> placed;                  // problem stem -> file
    std::vector<std::pair<std::string, std::string>> unplaced; // file name, reason
};
// `files`: the folder's solution files (any extension), sorted. Files without a leading number are
// ignored, files of another extension than `extension` are unplaced. `backend` empty: the backend is
// the name's last word (sweeps); else only files named <n>_<name>_<backend><ext> are considered (and
// those placed by hand). Throws pkbw::Error on a by-hand problem that is not known.
FolderPlacement place_files(const std::vector<std::filesystem::path>& files, const ProblemNames& names,
                            const std::string& extension, const std::map<std::string, std::string>& by_hand,
                            const std::string& backend = "");

// --place FILE=PROBLEM entries as plan_sweep's `by_hand`, keyed by FILE's name (a path may be given);
// throws pkbw::Error on one without '='.
std::map<std::string, std::string> parse_place_flags(const std::vector<std::string>& entries);

// A single run's solution in a folder (`pkbw eval --solution <backend> --solutions-dir DIR`): the file
// the sweep's rules place at `problem_stem` among DIR's <n>_<name>_<backend><extension> files (a
// renumbered folder's 41_ddp_cuda.py for PKB HEAD's 40_ddp), or on a miss an error naming the
// expected file, the folder's closest files (what each is placed at, or why not) and --place.
struct SolutionLookup {
    std::filesystem::path file; // empty on a miss
    std::string placed_by;      // as in a sweep's mapping
    bool renumbered = false;    // the file's number is not the problem's
    std::string error;
    // Found, but not as {stem}_{backend}{extension}: which file was chosen and why, for the run's output.
    std::string note;
};
SolutionLookup find_solution_file(const std::filesystem::path& dir, const std::vector<KnownProblem>& known,
                                  const std::string& problem_stem, const std::string& backend,
                                  const std::string& extension, const std::vector<std::string>& place = {});

// A solution file given as a path is checked against the problem asked for: when its name (the
// sweep's rules, the last word taken as the backend or not) names another known problem, that
// problem, described ("1_allreduce (by its name)"); nullopt when the name names `asked_stem`, or no
// problem, or the file has no leading number (a number alone never names a problem).
std::optional<std::string> file_names_other_problem(const std::string& file_name,
                                                    const std::vector<KnownProblem>& known,
                                                    const std::string& asked_stem);

// The refusal of a solution file given as a path whose name names another problem than `asked_stem`
// (both named, and --ignore-name), or "".
std::string solution_name_refusal(const std::filesystem::path& file, const std::vector<KnownProblem>& known,
                                  const std::string& asked_stem);

} // namespace pkbw::cli
