// The run folder's layout (docs/formats.md "The run folder"): where a run's files lie under its folder,
// for every side that writes or reads them: the launcher (config, compile logs, rank logs), the
// judges, pkbw-rank and PKB's Python judge (events, outputs, inputs, traces), the store's readers and
// the workbench. The patterns are the contract: {rank}, {trial} and {side} stand for a rank, a trial and
// "reference" or "candidate" (or a compile's side); PKB's Python judge restates the ones it writes as
// LAYOUT_* constants, which a test holds to these (tests/engine/test_pkb_contract_words.py).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace pkbw::run_layout {

inline constexpr std::string_view kConfig = "config.json";           // the ranks' configuration
inline constexpr std::string_view kEnvironment = "environment.json"; // GPUs and versions, from the hellos
inline constexpr std::string_view kCompileLog = "compile_{side}.log";
inline constexpr std::string_view kRankLog = "rank_{rank}.log";             // a rank's stderr
inline constexpr std::string_view kRankEvents = "rank_{rank}.events.jsonl"; // a rank's protocol events
inline constexpr std::string_view kTrialDir = "outputs/trial_{trial}";
inline constexpr std::string_view kTrialOutputs = "rank_{rank}_{side}.safetensors"; // in kTrialDir
inline constexpr std::string_view kTrialInputs = "rank_{rank}_inputs.safetensors";  // in kTrialDir
inline constexpr std::string_view kTraceDir = "trace";
inline constexpr std::string_view kEngineTrace = "rank_{rank}.engine.jsonl";     // in a trace folder
inline constexpr std::string_view kTorchTrace = "rank_{rank}.{side}.torch.json"; // PKB runs' torch profiles
inline constexpr std::string_view kCandidateTraceDir = "candidate"; // in kTraceDir: what the candidate wrote

// A pattern with its {rank}, {trial} and {side} filled in (a field the pattern lacks is ignored).
std::string fill(std::string_view pattern, int rank = 0, int trial = 0, std::string_view side = {});

std::filesystem::path config(const std::filesystem::path& run_dir);
std::filesystem::path environment(const std::filesystem::path& run_dir);
std::filesystem::path compile_log(const std::filesystem::path& run_dir, std::string_view side);
std::filesystem::path rank_log(const std::filesystem::path& run_dir, int rank);
std::filesystem::path rank_events(const std::filesystem::path& run_dir, int rank);
std::filesystem::path trial_dir(const std::filesystem::path& run_dir, int trial);
std::filesystem::path trial_outputs(const std::filesystem::path& run_dir, int trial, int rank,
                                    std::string_view side);
std::filesystem::path trial_inputs(const std::filesystem::path& run_dir, int trial, int rank);
std::filesystem::path trace_dir(const std::filesystem::path& run_dir);
// `folder`: a trace folder (the run's trace/, or the candidate's own below it).
std::filesystem::path engine_trace(const std::filesystem::path& folder, int rank);

// The store's folder (docs/formats.md): the run folders under runs/ beside the store file, and the
// machine's calibration per world size (`pkbw calibrate`) beside it.
inline constexpr std::string_view kRunsDir = "runs";
inline constexpr std::string_view kCalibration = "calibration_w{world}.json";
std::filesystem::path runs_dir_of_store(const std::filesystem::path& store_file);
std::string calibration_file_name(int world_size);

} // namespace pkbw::run_layout
