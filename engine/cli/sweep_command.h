// `pkbw sweep`, `pkbw sweeps`, `pkbw store merge` (docs/sweeps.md): registered on the CLI11 app by
// main.cpp, which calls dispatch() after parsing.
#pragma once

#include "sweep_cluster.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::cli {

struct SweepFlags {
    std::vector<std::string> solutions_dirs;
    std::string problems = "all";
    std::string mode = "eval";
    int nproc = 0;
    std::string backend;
    std::optional<std::string> pkb_checkout;
    std::string python;
    std::string arch;
    std::string name;
    std::optional<std::int64_t> resume, collect;
    std::optional<std::string> task_file;
    int task_index = -1;
    bool json = false, plan_only = false, perf_concurrent = false, no_prefetch = false;
    int jobs = 0;
    int runs_per_gpu = 1;
    std::optional<std::string> store, cache_dir;
    std::vector<std::string> run_args;
    std::vector<std::string> place; // FILE=PROBLEM
    ClusterOptions cluster;
    std::string local_dir;
};

class SweepCommands {
public:
    explicit SweepCommands(CLI::App& app);
    // The exit code when one of these commands was parsed.
    std::optional<int> dispatch();

private:
    int sweep();
    // --collect ID: merge the published task stores of a submitted sweep, print its table.
    int collect(Store& store, const std::filesystem::path& store_path);
    // The sweep to run: --resume's, the one of --name with pairs left, or a new one planned from the
    // folders. An exit code when the command ends here (--plan, bad input), else nullopt with `sweep` set.
    std::optional<int> find_or_create_sweep(Store& store, const std::filesystem::path& store_path,
                                            std::optional<SweepRecord>& sweep);
    // Runs the pending pairs on this machine, sets the sweep's status and prints its table.
    int run_here(Store& store, const SweepRecord& sweep, const SweepContext& context);
    CLI::App *sweep_ = nullptr, *sweeps_ = nullptr, *store_ = nullptr, *merge_ = nullptr;
    SweepFlags flags_;
    std::optional<std::string> sweeps_store_;
    bool sweeps_json_ = false;
    std::vector<std::string> merge_inputs_;
    std::string merge_into_;
    bool merge_json_ = false;
};

} // namespace pkbw::cli
