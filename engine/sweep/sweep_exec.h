// Runs a sweep's pending pairs on this machine: each pair is a child `pkbw eval|perf --json` process
// (so a pair that crashes pkbw itself costs that pair only), several at once on disjoint resources,
// with the compiles of upcoming pairs done ahead in the compile cache (docs/sweeps.md "Scheduling").
#pragma once

#include "pkbw/core/sweep_store.h"

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace pkbw::cli {

struct SweepContext {
    std::filesystem::path store_path;
    std::filesystem::path cache_dir;
    std::filesystem::path pkbw;     // this executable: what runs each pair
    std::filesystem::path work_dir; // <store dir>/sweeps/<uuid>: pair logs, task files
    bool json = false;
    bool terminal = false; // stdout is a terminal: a redrawn progress line
    int jobs = 0;          // host backend: pairs at once (0: the cores / W)
    bool perf_concurrent = false;
    bool prefetch_compiles = true;
    // eval on GPUs: runs that may share one slot's GPUs at once (their compiles, Python start-up and
    // torch extension builds overlap; correctness only). perf never shares: 1 there.
    int runs_per_gpu = 1;
};

// GPU ids this process may use: CUDA_VISIBLE_DEVICES when set (an empty value is none), else
// /dev/nvidia0.. counted.
std::vector<std::string> visible_gpus();

// Resource sets for the runs that may go at once: on cuda G/W disjoint sets of W GPUs (runs that time,
// sweep_times: one set unless perf_concurrent, so that timing never shares the node), each listed
// `runs_per_gpu` times in eval (the sets in turn, so that runs spread over the GPUs before they share one),
// then capped at `jobs`; on host `jobs` (default the cores / W, at least 1) empty sets. Throws pkbw::Error
// when cuda has fewer than W GPUs.
std::vector<std::vector<std::string>> run_slots(const SweepRecord& sweep, const SweepContext& context);

// Whether the sweep's runs time: --mode perf, or flags for every run that ask for it (`-- --perf`).
// Such runs never share a GPU (--runs-per-gpu applies to the others).
bool sweep_times(const std::string& mode, const std::vector<std::string>& run_args);
bool sweep_times(const SweepRecord& sweep);

// The child command of one pair.
std::vector<std::string> pair_command(const SweepRecord& sweep, const SweepPair& pair,
                                      const SweepContext& context);

struct ExecuteResult {
    int finished = 0;
    bool interrupted = false;
};

// Runs every pair of `sweep` that is not done (resume) and records each outcome in the store as it
// ends. Never stops at a failing pair; stops starting new ones on SIGINT/SIGTERM, lets the running
// ones record `interrupted`, and leaves those pairs pending.
ExecuteResult execute_sweep(Store& store, const SweepRecord& sweep, const SweepContext& context,
                            std::ostream& out);

// The pairs of a sweep still to run: not done, or done with a run that is missing or did not finish.
std::vector<SweepPair> pending_pairs(const Store& store, std::int64_t sweep_id);

} // namespace pkbw::cli
