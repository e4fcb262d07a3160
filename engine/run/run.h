// One `pkbw eval` / `pkbw dryrun`: resolve the problem and the solution, compile both sides (cached),
// launch the ranks, collect their verdicts, record everything in the store and print the outcome.
// Every run that got as far as a resolved problem is in the store, whatever its end.
#pragma once

#include "launcher.h"
#include "pkbw/core/status.h"
#include "recorder.h"

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::cli {

// pkbw's exit codes, core's (status.h).
using status::kExitEnvironment;
using status::kExitFailed;
using status::kExitInterrupted;
using status::kExitOk;
using status::kExitUsage;

struct RunOptions {
    std::string mode = "eval"; // eval | dryrun | perf (eval, then timing)
    std::string problem = "1";
    std::string solution = "reference"; // reference | a backend name | a file path
    std::optional<std::filesystem::path> solutions_dir;
    int nproc = 0;
    std::string dtype; // empty: the solutions folder's precision (solutions_<b>_<precision>_...), else bf16
    std::int64_t m = 1024, n = 1024;
    int trials = 5;
    std::optional<double> atol, rtol; // default: the problem's (1e-2)
    std::string backend;              // cuda | host; empty: cuda when a GPU is present
    bool keep_outputs = false;
    bool keep_inputs = false; // write each trial's inputs too (PKB cross-check)
    bool all_trials = false;
    int trace_iterations = 0;    // > 0: a traced pass of this many iterations per side (--trace)
    bool perf = false;           // time after correctness (mode perf, or --perf)
    nlohmann::json perf_options; // the rank configuration's "perf" object (engine/runtime/perf_runner.h)
    // Independent launches of the pair (fresh processes, buffers and side order each; docs/perf.md
    // "Replication"): the first checks correctness, every one is timed.
    int launches = 3;
    // Launches a run may extend to when the verdict after `launches` is ambiguous (one look, then the
    // verdict stands; docs/perf.md "Replication"). 0: twice `launches` where that is 3 or more, else no
    // extension; `launches` or less: no extension.
    int max_launches = 0;
    double min_effect = 0.05; // the least speedup that counts as a difference (the verdict's band)
    std::uint64_t seed = 42;
    std::string inputs = "pkb"; // pkb | exact
    std::string arch = "sm_90";
    PhaseTimeouts timeouts = PhaseTimeouts::defaults();
    bool json = false;
    // Progress while the ranks run (run_progress.h): the CLI turns it on; `progress_terminal` says
    // that stderr is a terminal (one redrawn line).
    bool progress = false;
    bool progress_terminal = false;
    std::vector<std::string> command_line;
    std::filesystem::path cache_dir;    // compile cache root
    std::filesystem::path runs_dir;     // run directories are created under it
    std::filesystem::path rank_program; // empty: pkbw-rank beside this executable
    std::string store_description;      // shown in the summary ("runs.db path")
    // Run PKB's own Python solutions against this PKB checkout's reference and inputs
    // (docs/pkb-interop.md); the ranks are engine/python/pkbw_pkb_rank.py under `python`.
    std::optional<std::filesystem::path> pkb_checkout;
    std::string python; // empty: $PKBW_PYTHON, else python3 on PATH
    // Host backend: each rank's address space (RLIMIT_AS) in GiB; 0 = no limit; unset = half the
    // machine's memory shared among the ranks, at least 4 GiB.
    std::optional<double> memory_limit_gib;
    // A solution file whose name names another problem than `problem` is refused unless this is set
    // (--ignore-name): 1_allreduce_host.cpp is not judged as 2_allgather by accident.
    bool ignore_name = false;
    // --allow-multicast: a candidate that uses NVLink multicast runs even where multicast is off for
    // the ranks (safety.h); PKB runs then add none of multicast's off switches.
    bool allow_multicast = false;
    // --place FILE=PROBLEM: a file of --solutions-dir placed by hand, as a sweep's --place.
    std::vector<std::string> place;
};

// Whether this machine has an NVIDIA GPU device node (no driver call: pkbw itself stays CUDA-free).
bool gpu_present();

// The rank launch of a perf run's launch after the first (docs/tracing.md "Later launches"): `first`'s
// with `config` as the ranks' configuration and none of the tracing variables. Only the first launch
// is traced; a later rank process given CUDA_INJECTION64_PATH and PKBW_TRACE_DIR loaded the tracer,
// which opened the first launch's rank_<r>.cupti.jsonl again and left it empty (H200: the reference
// side of every traced perf run had no kernels).
LaunchSpec later_launch_spec(const LaunchSpec& first, const std::filesystem::path& config);

// Runs it; returns the process exit code. `out` receives the human summary or the JSON lines,
// `err` diagnostics.
int execute_run(const RunOptions& options, Recorder& recorder, std::ostream& out, std::ostream& err);

} // namespace pkbw::cli
