// Turning the ranks' events into the run's verdict, and printing it (PKB-like text or JSON lines).
#pragma once

#include "launcher.h"
#include "pkbw/core/status.h"

#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace pkbw::cli {

// `body[key]` as text whatever its JSON type; `fallback` when absent or null. Rank events are outside
// data: a wrong type must not abort the run.
std::string json_text(const nlohmann::json& body, const char* key, const std::string& fallback = {});

// Higher is worse; the run's status is the worst seen (docs/cli.md "Run status").
int status_severity(const std::string& status);
// The worse of two statuses.
const std::string& worse_status(const std::string& a, const std::string& b);

struct Verdict {
    std::string status{status::kPass};
    int exit_code = 0;
    std::string summary; // one line for the store and the last line printed
    // Things beside the status worth a look (an output that passes only through the tolerance, a
    // candidate importing an NCCL collective); each is also in the summary as "; warning: ...".
    std::vector<std::string> warnings;
    // Per trial, per rank: the rank_result bodies (trial -> rank -> body).
    std::map<int, std::map<int, nlohmann::json>> trials;
};

// `results`: (trial, rank) -> rank_result. `expected_trials`: how many trials the ranks were asked
// for (they stop early at a failing trial unless all_trials).
Verdict decide(const LaunchOutcome& launch, const std::map<std::pair<int, int>, nlohmann::json>& results,
               int world_size, int expected_trials, bool all_trials);

// Adds a warning (to `warnings` and the summary).
void add_warning(Verdict& verdict, const std::string& warning);
// Warnings from the candidate's output statistics in the ranks' comparisons: an output that is all
// zero, constant or has NaN where the reference's is not, grouped by output over ranks and trials.
std::vector<std::string> output_statistics_warnings(const Verdict& verdict);

// `trial k: match | ...` lines, per-rank statistics on a failing trial.
// `compared`: false for a dryrun, whose passing trial ran and compared nothing ("ran", not "match").
void print_trials(const Verdict& verdict, std::ostream& out, bool compared = true);
// The `trials` array of run_finished.
nlohmann::json trials_json(const Verdict& verdict);

} // namespace pkbw::cli
