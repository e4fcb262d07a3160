// eval, perf, dryrun and calibrate: the pkbw commands that judge a problem's solution (docs/cli.md),
// their shared options and how those become a run's RunOptions.
#pragma once

#include "pkbw/core/perf_defaults.h"
#include "run.h"

#include <CLI/CLI.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::cli {

// Perf flags shared by `pkbw perf` and `--perf` on eval and dryrun.
struct PerfFlags {
    bool perf = false;
    bool no_pkb = false;
    int pkb_warmup = perf_defaults::kPerfPkbWarmup, pkb_iterations = perf_defaults::kPerfPkbIterations;
    int warmup = perf_defaults::kPerfWarmup, pairs = perf_defaults::kPerfPairs;
    int iterations = perf_defaults::kPerfIterations, launches = 3;
    int max_launches = 0; // 0: twice --launches (RunOptions::max_launches)
    double min_effect = 0.05;
    std::string rotation = std::string(perf_defaults::kPerfRotation);
    bool bare_nccl = false;
    std::string graph = "on";
};

// A command that judges a problem's solution: eval, perf, dryrun or calibrate. CLI11 binds these
// fields by reference, so a JudgeCommand does not move once its options are added.
struct JudgeCommand {
    CLI::App* app = nullptr;
    RunOptions options;
    PerfFlags perf;
    std::optional<std::string> store, solutions_dir, cache_dir;
    std::map<std::string, double> phase_timeouts;
    double timeout = 0, timeout_scale = 0;
    bool json_maps = false;
    bool perf_always = false; // `pkbw perf`: perf without --perf

    JudgeCommand() = default;
    JudgeCommand(const JudgeCommand&) = delete;
    JudgeCommand& operator=(const JudgeCommand&) = delete;

    // Runs the parsed command with its flags folded into the run's options.
    int run(const std::vector<std::string>& command_line) const;
};

// `pkbw calibrate`: only --nproc, --store and --json.
void add_calibrate(CLI::App& app, JudgeCommand& command);
// `pkbw check`: a native candidate compiled and its flags listed, no run, no store (run_check.cpp).
void add_check(CLI::App& app, JudgeCommand& command);
// eval, perf and dryrun; eval and perf compare over trials (with_trials).
void add_judge(CLI::App& app, JudgeCommand& command, const char* name, const char* help, bool is_perf,
               bool with_trials);

} // namespace pkbw::cli
