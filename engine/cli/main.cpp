// pkbw: the command-line program (docs/cli.md). `pkbw eval` and `pkbw dryrun` run a problem's
// candidate (or reference) on W ranks and record the run; `problems`, `runs`, `show` read.
#include "export_command.h"
#include "launcher.h"
#include "pkbw/core/error.h"
#include "pkbw/problems/registry.h"
#include "run.h"
#include "signals.h"
#include "store_recorder.h"
#include "version.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

using namespace pkbw;
using namespace pkbw::cli;

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
    command.add_flag("--json", options.json, "JSON lines on stdout (docs/cli.md)");
    command.add_option("--timeout", timeout, "seconds the candidate phase may take on a rank (default 60)");
    command.add_option("--timeout-scale", timeout_scale, "multiply every phase deadline");
    for (const auto& phase : PhaseTimeouts::phase_names())
        command.add_option("--timeout-" + phase, phase_timeouts[phase], "seconds for phase " + phase);
}

int run_command(RunOptions options, const std::optional<std::string>& store_flag,
                const std::optional<std::string>& solutions_dir, const std::optional<std::string>& cache_dir,
                const std::map<std::string, double>& phase_timeouts, double timeout, double timeout_scale,
                std::vector<std::string> command_line) {
    if (solutions_dir)
        options.solutions_dir = *solutions_dir;
    for (const auto& [phase, seconds] : phase_timeouts) {
        if (seconds > 0)
            options.timeouts.seconds[phase] = seconds;
    }
    if (timeout > 0)
        options.timeouts.seconds["candidate"] = timeout;
    if (timeout_scale > 0)
        options.timeouts.scale(timeout_scale);
    options.command_line = std::move(command_line);
    std::filesystem::path store_path = resolve_store_path(store_flag);
    options.cache_dir = cache_dir ? std::filesystem::path(*cache_dir) : default_cache_root();
    options.runs_dir = store_path.parent_path() / "runs";
    std::unique_ptr<Recorder> recorder;
    try {
        recorder = open_store_recorder(store_path);
    } catch (const Error& error) {
        std::cerr << "pkbw: " << error.what() << "\n";
        return kExitEnvironment;
    }
    SignalScope signals;
    int code = execute_run(options, *recorder, std::cout, std::cerr);
    if (interrupt_signal() != 0)
        code = kExitInterrupted;
    return code;
}

int list_problems(bool as_json) {
    if (as_json) {
        nlohmann::json list = nlohmann::json::array();
        for (const Problem* p : all_problems()) {
            const auto& info = p->info();
            list.push_back(
                {{"id", info.id}, {"stem", info.stem}, {"category", info.category}, {"title", info.title}});
        }
        std::cout << list.dump() << "\n";
        return 0;
    }
    for (const Problem* p : all_problems()) {
        const auto& info = p->info();
        std::printf("%4d  %-24s %-4s %s\n", info.id, info.stem.c_str(), info.category.c_str(),
                    info.title.c_str());
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> command_line(argv, argv + argc);
    CLI::App app{"pkbw: evaluate multi-GPU kernels against ParallelKernelBench references"};
    app.require_subcommand(0, 1);
    bool show_version = false;
    app.add_flag("--version", show_version, "print versions (pkbw, CUDA, NCCL) and exit");

    auto* problems = app.add_subcommand("problems", "list the problems");
    bool problems_json = false;
    problems->add_flag("--json", problems_json);

    RunOptions eval_options, dry_options;
    std::optional<std::string> store[2], solutions_dir[2], cache_dir[2];
    std::map<std::string, double> phase_timeouts[2];
    double timeout[2] = {0, 0}, timeout_scale[2] = {0, 0};
    auto* eval = app.add_subcommand("eval", "compare a candidate with the reference over trials");
    add_run_options(*eval, eval_options, store[0], solutions_dir[0], cache_dir[0], phase_timeouts[0],
                    timeout[0], timeout_scale[0]);
    eval->add_option("--trials", eval_options.trials, "number of trials (default 5)");
    eval->add_option("--atol", eval_options.atol, "absolute tolerance (default 1e-2)");
    eval->add_option("--rtol", eval_options.rtol, "relative tolerance (default 1e-2)");
    eval->add_flag("--all-trials", eval_options.all_trials, "do not stop at the first failing trial");
    eval->add_flag("--keep-outputs", eval_options.keep_outputs, "write every trial's outputs");
    eval_options.solution = "";
    auto* dryrun = app.add_subcommand("dryrun", "run one side (reference or candidate) once");
    add_run_options(*dryrun, dry_options, store[1], solutions_dir[1], cache_dir[1], phase_timeouts[1],
                    timeout[1], timeout_scale[1]);
    dryrun->add_flag("--keep-outputs", dry_options.keep_outputs, "write the outputs");
    dry_options.mode = "dryrun";
    eval->callback([] {});
    eval->get_option("--solution")->required();

    auto* runs = app.add_subcommand("runs", "list recent runs");
    RunsQuery query;
    std::optional<std::string> runs_store, show_store;
    runs->add_option("--problem", query.problem, "problem stem");
    runs->add_option("--status", query.status, "pass, mismatch, compile_error, crash, timeout, error, ...");
    runs->add_option("--limit", query.limit, "at most this many (default 20)");
    runs->add_option("--store", runs_store, "SQLite store");
    runs->add_flag("--json", query.json);

    auto* show = app.add_subcommand("show", "print a run with its per-trial, per-rank results");
    std::int64_t run_id = 0;
    bool show_json = false;
    show->add_option("RUN", run_id, "run id")->required();
    show->add_option("--store", show_store, "SQLite store");
    show->add_flag("--json", show_json);

    auto* export_cmd = app.add_subcommand("export", "write a run's stored traces (docs/tracing.md)");
    std::int64_t export_run = 0;
    std::string export_format = "chrome-trace", export_output = "-";
    std::optional<std::string> export_store;
    export_cmd->add_option("RUN", export_run, "run id")->required();
    export_cmd->add_option("--format", export_format, "chrome-trace | csv");
    export_cmd->add_option("--output", export_output, "file, or - for stdout");
    export_cmd->add_option("--store", export_store, "SQLite store");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        int code = app.exit(error);
        return code == 0 ? 0 : kExitUsage;
    }
    try {
        if (show_version) {
            std::cout << version_text();
            return 0;
        }
        if (problems->parsed())
            return list_problems(problems_json);
        if (eval->parsed())
            return run_command(eval_options, store[0], solutions_dir[0], cache_dir[0], phase_timeouts[0],
                               timeout[0], timeout_scale[0], command_line);
        if (dryrun->parsed())
            return run_command(dry_options, store[1], solutions_dir[1], cache_dir[1], phase_timeouts[1],
                               timeout[1], timeout_scale[1], command_line);
        if (runs->parsed())
            return list_runs(resolve_store_path(runs_store), query, std::cout, std::cerr);
        if (export_cmd->parsed())
            return run_export_command(resolve_store_path(export_store).string(), export_run, export_format,
                                      export_output);
        if (show->parsed())
            return show_run(resolve_store_path(show_store), run_id, show_json, std::cout, std::cerr);
        std::cout << app.help();
        return kExitUsage;
    } catch (const StoreError& error) {
        std::cerr << "pkbw: " << error.what() << "\n";
        return kExitEnvironment;
    } catch (const std::exception& error) {
        std::cerr << "pkbw: " << error.what() << "\n";
        return kExitFailed;
    }
}
