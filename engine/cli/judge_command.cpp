// The judging commands' options (judge_command.h).
#include "judge_command.h"

#include "cli_errors.h"
#include "json_maps_filter.h"
#include "launcher.h"
#include "pkbw/core/error.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/status.h"
#include "recorder.h"
#include "signals.h"
#include "store_recorder.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace pkbw::cli {
namespace {

void add_run_options(CLI::App& command, RunOptions& options, std::optional<std::string>& store,
                     std::optional<std::string>& solutions_dir, std::optional<std::string>& cache_dir,
                     std::map<std::string, double>& phase_timeouts, double& timeout, double& timeout_scale) {
    command.add_option("-p,--problem", options.problem, "problem number or stem (1, 2_allgather)")
        ->required();
    command.add_option("-s,--solution", options.solution,
                       "reference | a name resolved as {stem}_{name}.cu/.cpp in --solutions-dir | a file");
    command.add_option("--solutions-dir", solutions_dir,
                       "folder of candidate solutions (default solutions_<name>)");
    command.add_option("--nproc,--nproc-per-node,--num-gpus", options.nproc, "world size W")->required();
    command.add_option("--dtype", options.dtype, "bf16, f32, f16, f64 (PyTorch spellings accepted)");
    command.add_option("--m", options.m, "base shape M");
    command.add_option("--n", options.n, "base shape N");
    command.add_option("--seed", options.seed, "base seed");
    command.add_option("--inputs", options.inputs, "pkb | exact")->check(CLI::IsMember({"pkb", "exact"}));
    command.add_option("--backend", options.backend, "cuda | host (default: cuda when a GPU is present)")
        ->check(CLI::IsMember({"cuda", "host"}));
    command.add_option("--arch", options.arch, "nvcc -arch (cuda backend)");
    command.add_option("--store", store,
                       "SQLite store (default $PKBW_STORE, else ~/.local/share/pkbw/runs.db)");
    command.add_option("--cache-dir", cache_dir, "compile cache root (default ~/.cache/pkbw)");
    command.add_option("--rank-program", options.rank_program,
                       "the rank program (default pkbw-rank beside pkbw)");
    command.add_option("--pkb-checkout", options.pkb_checkout,
                       "run PKB's Python solutions against this ParallelKernelBench checkout");
    command.add_option("--python", options.python,
                       "interpreter for PKB solutions (default $PKBW_PYTHON, else python3)");
    command.add_option("--place", options.place,
                       "FILE=PROBLEM: run this file of --solutions-dir as PROBLEM (a number or stem), as the "
                       "sweep's --place (repeatable)");
    command.add_flag("--ignore-name", options.ignore_name,
                     "judge a --solution file as --problem even when its name names another problem");
    command.add_flag("--allow-multicast", options.allow_multicast,
                     "run a candidate that uses NVLink multicast where it is off for the ranks (a machine "
                     "with multicast; PKB runs then leave multicast's switches unset)");
    command.add_flag("--json", options.json, "JSON lines on stdout (docs/cli.md)");
    command.add_option("--timeout", timeout, "seconds the candidate phase may take on a rank (default 60)");
    command.add_option("--timeout-scale", timeout_scale, "multiply every phase deadline");
    command.add_option("--memory-limit", options.memory_limit_gib,
                       "host backend: each rank's address space in GiB (0: none; default: half the "
                       "machine's memory shared among the ranks, at least 4)");
    for (const auto& phase : PhaseTimeouts::phase_names())
        command.add_option("--timeout-" + phase, phase_timeouts[phase], "seconds for phase " + phase);
}

void add_perf_options(CLI::App& command, PerfFlags& flags, bool with_switch) {
    if (with_switch)
        command.add_flag("--perf", flags.perf, "time reference and candidate after correctness");
    command.add_flag("--no-pkb", flags.no_pkb, "skip PKB's protocol (500 warmup + 100 timed per side)");
    command.add_option("--pkb-warmup", flags.pkb_warmup, "PKB protocol warmup iterations (500)");
    command.add_option("--pkb-iters", flags.pkb_iterations, "PKB protocol timed iterations (100)");
    command.add_option("--warmup", flags.warmup, "pkbw warmup calls per side (50)");
    command.add_option("--pairs", flags.pairs, "pkbw ABBA block pairs of each launch: blocks per side (5)");
    command
        .add_option("--launches", flags.launches,
                    "independent launches of the pair, fresh processes each (3; the interval is over them)")
        ->check(CLI::Range(1, 100));
    command
        .add_option("--max-launches", flags.max_launches,
                    "launches a run extends to, once, when its verdict after --launches is ambiguous "
                    "(twice --launches when that is 3 or more; --launches or fewer: never)")
        ->check(CLI::Range(0, 200));
    command
        .add_option("--min-effect", flags.min_effect,
                    "the least speedup counted as a difference, as a fraction (0.05: x1.05); an A/A noise "
                    "floor measured with --solution reference widens it")
        ->check(CLI::Range(0.0, 10.0));
    command.add_option("--iters", flags.iterations,
                       "pkbw calls per block, each on fresh inputs and checked (50; raised until a block's "
                       "inputs span 3x L2, lowered to fit memory)");
    command
        .add_option("--rotation", flags.rotation,
                    "copies: raise the calls per block until their inputs span 3x L2 | none: as --iters says")
        ->check(CLI::IsMember({"copies", "none"}));
    command.add_flag("--bare-nccl", flags.bare_nccl,
                     "also time a bare NCCL loop of the problem's collective");
    command
        .add_option("--graph", flags.graph,
                    "on: after the launched blocks, time as many of each side replayed from a CUDA graph of "
                    "its calls, the graph figure (cuda backend) | off")
        ->check(CLI::IsMember({"on", "off"}));
}

nlohmann::json perf_json(const PerfFlags& f) {
    return {{"pkb", !f.no_pkb},
            {"pkb_warmup", f.pkb_warmup},
            {"pkb_iterations", f.pkb_iterations},
            {"pkbw", true},
            {"warmup", f.warmup},
            {"pairs", f.pairs},
            {"iterations", f.iterations},
            {"rotation", f.rotation},
            {"bare_nccl", f.bare_nccl},
            {"graph", f.graph == "on"}};
}

int run_command(RunOptions options, const std::optional<std::string>& store_flag,
                const std::optional<std::string>& solutions_dir, const std::optional<std::string>& cache_dir,
                const std::map<std::string, double>& phase_timeouts, double timeout, double timeout_scale,
                std::vector<std::string> command_line, bool json_maps) {
    if (solutions_dir)
        options.solutions_dir = *solutions_dir;
    for (const auto& [phase, seconds] : phase_timeouts) {
        if (seconds > 0) {
            options.timeouts.seconds[phase] = seconds;
            options.timeouts.asked.insert(phase);
        }
    }
    if (timeout > 0) {
        options.timeouts.seconds["candidate"] = timeout;
        options.timeouts.asked.insert("candidate");
    }
    if (timeout_scale > 0)
        options.timeouts.scale(timeout_scale);
    options.command_line = std::move(command_line);
    std::filesystem::path store_path = resolve_store_path(store_flag);
    options.cache_dir = cache_dir ? std::filesystem::path(*cache_dir) : default_cache_root();
    options.runs_dir = run_layout::runs_dir_of_store(store_path);
    std::unique_ptr<Recorder> recorder;
    try {
        recorder = open_store_recorder(store_path);
    } catch (const Error& error) {
        std::cerr << "pkbw: " << error.what() << "\n";
        if (options.json)
            std::cout << error_json_line(options.mode, kExitEnvironment, error.what()) << std::flush;
        return kExitEnvironment;
    }
    options.progress = true;
    options.progress_terminal = ::isatty(STDERR_FILENO) != 0;
    SignalScope signals;
    // --json leaves out the per-element error maps unless --json-maps (json_maps_filter.h).
    std::optional<ErrorMapFilter> compact;
    std::optional<std::ostream> compact_out;
    if (options.json && !json_maps) {
        compact.emplace(std::cout);
        compact_out.emplace(&*compact);
    }
    int code = execute_run(options, *recorder, compact_out ? *compact_out : std::cout, std::cerr);
    if (compact_out)
        compact_out->flush();
    if (interrupt_signal() != 0)
        code = kExitInterrupted;
    return code;
}

} // namespace

int JudgeCommand::run(const std::vector<std::string>& command_line) const {
    if (options.mode == status::kModeCheck) {
        // No store is opened (or created): a check records nothing.
        RunOptions check_options = options;
        if (solutions_dir)
            check_options.solutions_dir = *solutions_dir;
        check_options.cache_dir = cache_dir ? std::filesystem::path(*cache_dir) : default_cache_root();
        check_options.command_line = command_line;
        MemoryRecorder nothing_kept;
        return execute_run(check_options, nothing_kept, std::cout, std::cerr);
    }
    RunOptions run_options = options;
    run_options.perf = perf_always || perf.perf;
    run_options.perf_options = perf_json(perf);
    run_options.launches = perf.launches;
    run_options.max_launches = perf.max_launches;
    run_options.min_effect = perf.min_effect;
    return run_command(run_options, store, solutions_dir, cache_dir, phase_timeouts, timeout, timeout_scale,
                       command_line, json_maps);
}

void add_calibrate(CLI::App& app, JudgeCommand& c) {
    c.app = app.add_subcommand(
        "calibrate", "measure this machine's NCCL all-reduce/all-gather busbw and peer-copy bandwidth");
    c.options.mode = status::kModeCalibrate;
    c.app->add_option("--nproc,--nproc-per-node,--num-gpus", c.options.nproc, "world size W")->required();
    c.app->add_option("--store", c.store, "SQLite store");
    c.app->add_flag("--json", c.options.json, "JSON lines on stdout (docs/cli.md)");
}

void add_check(CLI::App& app, JudgeCommand& c) {
    c.app = app.add_subcommand("check", "compile a native candidate and list its flags, without running it "
                                        "(no GPU needed; nothing recorded)");
    RunOptions& o = c.options;
    o.mode = status::kModeCheck;
    o.nproc = 2;
    c.app->add_option("-p,--problem", o.problem, "problem number or stem (1, 2_allgather)")->required();
    c.app->add_option("-s,--solution", o.solution,
                      "a file, or a name resolved as {stem}_{name}.cu/.cpp in --solutions-dir (with "
                      "--pkb-checkout: a .py file, or the folder's file for the problem)");
    c.app->add_option("--solutions-dir", c.solutions_dir,
                      "folder of candidate solutions (default solutions_<name>)");
    c.app->add_option("--backend", o.backend, "cuda | host (default: from the file's extension)")
        ->check(CLI::IsMember({"cuda", "host"}));
    c.app->add_option("--arch", o.arch, "nvcc -arch (cuda backend; default sm_90)");
    c.app->add_option("--nproc,--nproc-per-node,--num-gpus", o.nproc,
                      "world size the flags are read for (the problem's own collective; default 2)");
    c.app->add_option("--cache-dir", c.cache_dir, "compile cache root (default ~/.cache/pkbw)");
    c.app->add_option("--place", o.place, "FILE=PROBLEM: take this file of --solutions-dir as PROBLEM");
    c.app->add_flag("--ignore-name", o.ignore_name,
                    "check a --solution file as --problem even when its name names another problem");
    c.app->add_option("--pkb-checkout", o.pkb_checkout,
                      "check a PKB Python solution against this ParallelKernelBench checkout (placement, "
                      "refusals, its source's flags)");
    c.app->add_flag(
        "--allow-multicast", o.allow_multicast,
        "as eval: a candidate that uses NVLink multicast is not refused (a machine with multicast)");
    c.app->add_flag("--json", o.json, "one check_finished JSON line on stdout (docs/cli.md)");
}

void add_judge(CLI::App& app, JudgeCommand& c, const char* name, const char* help, bool is_perf,
               bool with_trials) {
    RunOptions& o = c.options;
    c.app = app.add_subcommand(name, help);
    c.perf_always = is_perf;
    o.mode = name;
    add_run_options(*c.app, o, c.store, c.solutions_dir, c.cache_dir, c.phase_timeouts, c.timeout,
                    c.timeout_scale);
    add_perf_options(*c.app, c.perf, !is_perf);
    c.app->add_flag("--json-maps", c.json_maps,
                    "with --json: keep each output's error map (up to 256x256 values) in rank_result "
                    "and run_finished (the store keeps them either way)");
    c.app->add_flag("--keep-outputs", o.keep_outputs, "write every trial's outputs");
    c.app->add_flag("--keep-inputs", o.keep_inputs, "write every trial's inputs (PKB cross-check)");
    c.app->add_flag("--trace{10}", o.trace_iterations,
                    "after correctness, a traced pass of N (--trace=N, default 10) iterations per side");
    if (!with_trials)
        return;
    c.app->add_option("--trials", o.trials, "number of trials (default 5)");
    c.app->add_option("--atol", o.atol, "absolute tolerance (default 1e-2)");
    c.app->add_option("--rtol", o.rtol, "relative tolerance (default 1e-2)");
    c.app->add_flag("--all-trials", o.all_trials, "do not stop at the first failing trial");
    o.solution = ""; // required, except with --pkb-checkout (the folder names the backend)
}

} // namespace pkbw::cli
