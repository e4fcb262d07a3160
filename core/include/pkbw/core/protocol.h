// The JSON-lines protocol: one JSON object per line, with an "event" field. Rank processes speak it
// to the pkbw launcher over a pipe, and `pkbw --json` speaks it to the GUI and scripts on stdout.
// docs/cli.md lists every event and its fields; this file is the one definition writer and reader
// share.
#pragma once

#include "pkbw/core/compare.h"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace pkbw::protocol {

inline constexpr int kVersion = 1;
// A line longer than this is refused (a rank printing garbage into the pipe must not exhaust memory).
inline constexpr std::size_t kMaxLineBytes = 64u << 20;

// Event names.
inline constexpr std::string_view kHello = "hello";            // rank: started, identity, devices
inline constexpr std::string_view kPhase = "phase";            // rank: entering a phase
inline constexpr std::string_view kRankResult = "rank_result"; // rank: one trial's verdict on this rank
inline constexpr std::string_view kPerfResult = "perf_result"; // rank: timing samples (perf issue)
inline constexpr std::string_view kPerfProgress =
    "perf_progress";                                           // rank: block k of N of the perf phase timed
inline constexpr std::string_view kError = "error";            // rank or launcher: a failure with its message
inline constexpr std::string_view kRankDone = "rank_done";     // rank: finished cleanly
inline constexpr std::string_view kCandidate = "candidate";    // rank: its candidate process started / ended
inline constexpr std::string_view kTimingPlan = "timing_plan"; // rank: how its timed blocks are made
inline constexpr std::string_view kTimedCheck =
    "timed_check"; // rank: every call of a candidate block checked
inline constexpr std::string_view kRunStarted = "run_started";       // launcher
inline constexpr std::string_view kCompile = "compile";              // launcher: a compile finished
inline constexpr std::string_view kRankExit = "rank_exit";           // launcher: a rank process ended
inline constexpr std::string_view kLog = "log";                      // launcher: a line a rank printed
inline constexpr std::string_view kRunFinished = "run_finished";     // launcher: the final object
inline constexpr std::string_view kCheckFinished = "check_finished"; // pkbw check: its final object (no run)
inline constexpr std::string_view kProgress = "progress"; // pkbw --json: where a run, generate or agent is
inline constexpr std::string_view kProblem = "problem";   // pkbw problems --json: one problem per line

struct Message {
    std::string event;
    nlohmann::json body; // the whole object, "event" included
};

// Parses and validates one line: a JSON object with a string "event"; for the events above, the
// required fields with their types. Unknown events are accepted (forward compatibility) with only
// the "event" check. Throws pkbw::FormatError naming `source` and the field.
Message parse_line(std::string_view line, const std::string& source);
// Serialises one message as a single line ending in '\n'.
std::string to_line(const nlohmann::json& body);

nlohmann::json to_json(const TensorComparison& comparison, bool include_error_map = true);
// A TensorComparison's "ties" object (docs/formats.md "Tie reports"); the store keeps the same text.
// "explained" and "text" are written for readers and recomputed, not trusted, when read.
nlohmann::json to_json(const TieReport& report);
TieReport tie_report_from_json(const nlohmann::json& json, const std::string& source);
// Throws pkbw::FormatError naming `source` and the field.
TensorComparison tensor_comparison_from_json(const nlohmann::json& json, const std::string& source);

} // namespace pkbw::protocol
