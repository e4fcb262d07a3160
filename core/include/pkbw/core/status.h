// The words that cross process boundaries: rank exit codes, a rank result's status, the protocol's
// error kinds and phases, and the run statuses a perf run adds. Defined once here and read by the
// judge (pkbw-rank), the candidate process (pkbw-candidate), the launcher and the CLI
// (docs/engine.md). The run status enum itself is pkbw::RunStatus (store.h), stored as its text.
#pragma once

#include <string_view>

namespace pkbw::status {

// Exit codes of a rank program (pkbw-rank, pkbw_pkb_rank.py) and of the candidate process.
inline constexpr int kExitOk = 0;
inline constexpr int kExitEnvironment = 3;   // no GPU, NCCL or rendezvous failure
inline constexpr int kExitSolutionBroke = 4; // the solution broke the process (CUDA error, exception)
inline constexpr int kExitInternal = 5;

// Exit codes of pkbw itself (docs/cli.md "Run status and exit codes"), which agent loops and the
// workbench read: kExitOk, kExitFailed (a verdict other than pass), kExitUsage (bad input), the rank's
// kExitEnvironment, and kExitInterrupted (SIGINT/SIGTERM, as a shell reports them).
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;

// A run's mode (the rank config's "mode"; docs/cli.md): eval compares, dryrun only runs, perf compares
// then times, calibrate measures the machine (no problem). A dryrun runs one trial whatever was asked.
inline constexpr std::string_view kModeEval = "eval";
inline constexpr std::string_view kModeDryrun = "dryrun";
inline constexpr std::string_view kModePerf = "perf";
inline constexpr std::string_view kModeCalibrate = "calibrate";
inline constexpr std::string_view kModeCheck = "check"; // `pkbw check`: compile and flags; no rank runs
constexpr int trials_in_mode(std::string_view mode, int trials) {
    return mode == kModeDryrun ? 1 : trials;
}

// rank_result.status, most severe last.
inline constexpr std::string_view kPass = "pass";
inline constexpr std::string_view kMismatch = "mismatch";
inline constexpr std::string_view kInvalidOutput = "invalid_output";
inline constexpr std::string_view kError = "error";
inline constexpr std::string_view kCrash = "crash";

// A timed_check's status beside pass and mismatch: the timed calls of a block were not compared (the
// problem has no tensor output, or the reference's outputs lost trial 0's structure).
inline constexpr std::string_view kUnchecked = "unchecked";

// A perf run whose timing cannot be trusted (a timed call's output failed its check, the candidate's
// processes ran or held the GPU while the reference was timed; docs/perf.md): run status
// "invalid_timing" (RunStatus::InvalidTiming).
inline constexpr std::string_view kInvalidTiming = "invalid_timing";

// error.kind
inline constexpr std::string_view kKindSolutionError = "solution_error";
inline constexpr std::string_view kKindCudaError = "cuda_error";
inline constexpr std::string_view kKindNcclError = "nccl_error";
inline constexpr std::string_view kKindRendezvous = "rendezvous";
inline constexpr std::string_view kKindEnvironment = "environment";
inline constexpr std::string_view kKindInternal = "internal";

// phase.phase. kPhaseStart is where the launcher puts a rank until its first phase event (and the
// phase of an error sent before it); kPhaseCompile is PKB's Python judge loading the reference and
// the candidate (pkbw-rank's candidate is compiled before the launch).
inline constexpr std::string_view kPhaseStart = "start";
inline constexpr std::string_view kPhaseCompile = "compile";
inline constexpr std::string_view kPhaseRendezvous = "rendezvous";
inline constexpr std::string_view kPhaseInputs = "inputs";
inline constexpr std::string_view kPhaseCandidate = "candidate";
inline constexpr std::string_view kPhaseReference = "reference";
inline constexpr std::string_view kPhaseCompare = "compare";
inline constexpr std::string_view kPhasePerf = "perf";
inline constexpr std::string_view kPhaseTrace = "trace";
inline constexpr std::string_view kPhaseTeardown = "teardown";

} // namespace pkbw::status
