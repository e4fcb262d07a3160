// pkbw: the command-line program (docs/cli.md). `pkbw eval` and `pkbw dryrun` run a problem's
// candidate (or reference) on W ranks and record the run; `problems`, `runs`, `show` read.
#ifdef PKBW_HAVE_GENERATE
#include "commands.h" // engine/generate: prompt, generate, agent
#endif
#include "bundle_command.h"
#include "cli_errors.h"
#include "export_command.h"
#include "import_pkb_command.h"
#include "json_maps_filter.h"
#include "launcher.h"
#include "pkbw/core/error.h"
#include "pkbw/problems/registry.h"
#include "problems_command.h"
#include "run.h"
#include "signals.h"
#include "store_command.h"
#include "store_recorder.h"
#include "sweep_command.h"
#include "sweep_report.h"
#include "version.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <unistd.h>

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

// Perf flags shared by `pkbw perf` and `--perf` on eval and dryrun.
struct PerfFlags {
    bool perf = false;
    bool no_pkb = false;
    int pkb_warmup = 500, pkb_iterations = 100, warmup = 50, pairs = 5, iterations = 50, launches = 3;
    double min_effect = 0.05;
    std::string rotation = "copies";
    bool bare_nccl = false;
    std::string graph = "on";
};

void add_perf_options(CLI::App& command, PerfFlags& flags, bool with_switch) {
    if (with_switch)
        command.add_flag("--perf", flags.perf, "time reference and candidate after correctness");
    command.add_flag("--no-pkb", flags.no_pkb, "skip PKB's protocol (500 warmup + 100 timed per side)");
    command.add_option("--pkb-warmup", flags.pkb_warmup, "PKB protocol warmup iterations (500)");
    command.add_option("--pkb-iters", flags.pkb_iterations, "PKB protocol timed iterations (100)");
    command.add_option("--warmup", flags.warmup, "pkbw warmup calls per side (50)");
    command.add_option("--pairs", flags.pairs, "pkbw ABBA block pairs of each launch: blocks per side (5)");
    command.add_option("--launches", flags.launches,
                       "independent launches of the pair, fresh processes each (3; the interval is over them)")
        ->check(CLI::Range(1, 100));
    command.add_option("--min-effect", flags.min_effect,
                       "the least speedup counted as a difference, as a fraction (0.05: x1.05); an A/A noise "
                       "floor measured with --solution reference widens it")
        ->check(CLI::Range(0.0, 10.0));
    command.add_option("--iters", flags.iterations,
                       "pkbw calls per block, each on fresh inputs and checked (50; raised until a block's "
                       "inputs span 3x L2, lowered to fit memory)");
    command.add_option("--rotation", flags.rotation,
                       "copies: raise the calls per block until their inputs span 3x L2 | none: as --iters says")
        ->check(CLI::IsMember({"copies", "none"}));
    command.add_flag("--bare-nccl", flags.bare_nccl,
                     "also time a bare NCCL loop of the problem's collective");
    command.add_option("--graph", flags.graph,
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
    options.runs_dir = store_path.parent_path() / "runs";
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

int list_problems(bool as_json) {
    if (as_json) {
        for (auto problem : problems_json()) {
            problem["event"] = "problem";
            std::cout << problem.dump() << "\n";
        }
        return 0;
    }
    int width = 0; // the longest stem: the category column stays in line
    for (const Problem* p : all_problems())
        width = std::max(width, static_cast<int>(p->info().stem.size()));
    for (const Problem* p : all_problems()) {
        const auto& info = p->info();
        std::printf("%4d  %-*s %-4s %s\n", info.id, width, info.stem.c_str(), info.category.c_str(),
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
    problems->add_flag("--json", problems_json,
                       "JSON lines on stdout: one {\"event\": \"problem\", id, stem, ...} per problem");

    // eval, perf, dryrun and calibrate share the run options; index 0..3.
    RunOptions run_options[4];
    PerfFlags perf_flags[4];
    std::optional<std::string> store[4], solutions_dir[4], cache_dir[4];
    std::map<std::string, double> phase_timeouts[4];
    double timeout[4] = {0, 0, 0, 0}, timeout_scale[4] = {0, 0, 0, 0};
    bool json_maps[4] = {false, false, false, false};
    CLI::App* run_commands[4];
    const char* names[4] = {"eval", "perf", "dryrun", "calibrate"};
    const char* help[4] = {"compare a candidate with the reference over trials",
                           "eval, then time reference and candidate (pkbw's and PKB's protocols)",
                           "run one side (reference or candidate) once",
                           "measure this machine's NCCL all-reduce/all-gather busbw and peer-copy bandwidth"};
    for (int i = 0; i < 4; ++i) {
        RunOptions& o = run_options[i];
        CLI::App* command = run_commands[i] = app.add_subcommand(names[i], help[i]);
        o.mode = names[i];
        if (i == 3) {
            command->add_option("--nproc,--nproc-per-node,--num-gpus", o.nproc, "world size W")->required();
            command->add_option("--store", store[i], "SQLite store");
            command->add_flag("--json", o.json, "JSON lines on stdout (docs/cli.md)");
            continue;
        }
        add_run_options(*command, o, store[i], solutions_dir[i], cache_dir[i], phase_timeouts[i], timeout[i],
                        timeout_scale[i]);
        add_perf_options(*command, perf_flags[i], i != 1);
        command->add_flag("--json-maps", json_maps[i],
                          "with --json: keep each output's error map (up to 256x256 values) in rank_result "
                          "and run_finished (the store keeps them either way)");
        command->add_flag("--keep-outputs", o.keep_outputs, "write every trial's outputs");
        command->add_flag("--keep-inputs", o.keep_inputs, "write every trial's inputs (PKB cross-check)");
        command->add_flag(
            "--trace{10}", o.trace_iterations,
            "after correctness, a traced pass of N (--trace=N, default 10) iterations per side");
        if (i < 2) {
            command->add_option("--trials", o.trials, "number of trials (default 5)");
            command->add_option("--atol", o.atol, "absolute tolerance (default 1e-2)");
            command->add_option("--rtol", o.rtol, "relative tolerance (default 1e-2)");
            command->add_flag("--all-trials", o.all_trials, "do not stop at the first failing trial");
            o.solution = ""; // required, except with --pkb-checkout (the folder names the backend)
        }
    }

    auto* import_command =
        app.add_subcommand("import-pkb", "import a PKB logs folder (rank_<r>.pt, perf JSON) as runs");
    std::string import_dir;
    std::optional<std::string> import_store;
    bool import_json = false;
    import_command->add_option("DIR", import_dir, "PKB logs folder (logs/ or logs/problem_<stem>)")
        ->required();
    import_command->add_option("--store", import_store, "SQLite store");
    import_command->add_flag("--json", import_json, "JSON lines on stdout");
    std::string import_generation;
    import_command->add_option("--generation", import_generation,
                               "generation label (solutions_<backend>_<precision>_<hw>_<provider>_<model>)");

    auto* export_command =
        app.add_subcommand("export", "export a run's traces (Chrome trace JSON or kernel CSV)");
    std::int64_t export_run = 0;
    std::string export_format = "chrome-trace", export_output;
    std::optional<std::string> export_store;
    export_command->add_option("RUN", export_run, "run id")->required();
    export_command->add_option("--format", export_format, "chrome-trace | csv");
    export_command->add_option("--output,-o", export_output, "output file (- for stdout)")->required();
    export_command->add_option("--store", export_store, "SQLite store");

    auto* bundle_command = app.add_subcommand(
        "export-bundle", "write runs with their sources and artifacts to one file (pkbw-gui FILE opens it)");
    std::vector<std::string> bundle_args; // RUN... FILE
    std::optional<std::int64_t> bundle_sweep;
    std::optional<std::string> bundle_store;
    bundle_command->add_option("ARGS", bundle_args, "RUN... FILE, or FILE with --sweep")->required();
    bundle_command->add_option("--sweep", bundle_sweep, "every run of this sweep");
    bundle_command->add_option("--store", bundle_store, "SQLite store");

    auto* runs = app.add_subcommand("runs", "list recent runs");
    RunsQuery query;
    std::optional<std::string> runs_store, show_store;
    runs->add_option("--problem", query.problem, "problem stem or number");
    runs->add_option("--status", query.status, "pass, mismatch, compile_error, crash, timeout, error, ...");
    runs->add_option("--generation", query.generation, "generation label (solutions_... folder name)");
    runs->add_option("--sweep", query.sweep, "the runs of sweep ID");
    runs->add_option("--limit", query.limit, "at most this many (default 20)");
    runs->add_option("--store", runs_store, "SQLite store");
    runs->add_flag(
        "--json", query.json,
        "JSON lines: one {\"event\": \"run\", ...} per run, with its stored perf figures (or null)");

    auto* show = app.add_subcommand("show", "print a run with its per-trial, per-rank results");
    std::int64_t run_id = 0;
    bool show_json = false;
    std::optional<std::int64_t> show_sweep;
    show->add_option("RUN", run_id, "run id");
    show->add_option("--sweep", show_sweep, "show sweep ID's table instead of a run (docs/sweeps.md)");
    show->add_option("--store", show_store, "SQLite store");
    show->add_flag("--json", show_json,
                   "one JSON line {\"event\": \"run\", ...} (the stored perf figures under perf); with "
                   "--sweep {\"event\": \"sweep_table\", ...}");

    SweepCommands sweep_commands(app); // sweep, sweeps, store merge
    StoreCommands store_commands(app); // store check, store remove, store migrate
#ifdef PKBW_HAVE_GENERATE
    auto generation = pkbw::generate::register_commands(app); // prompt, generate, agent
    generation->set_command_line(command_line);
#endif

    const bool json_output = wants_json(command_line);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        if (error.get_exit_code() == 0)
            return app.exit(error); // --help
        const std::string message = parse_error_message(app, error, command_line);
        std::cerr << (message.rfind("pkbw", 0) == 0 ? "" : "pkbw: ") << message << "\n";
        if (json_output)
            std::cout << error_json_line(command_path(app, command_line), kExitUsage, message) << std::flush;
        return kExitUsage;
    }
    // Under --json an error the command printed on stderr also goes out as one JSON line (cli_errors.h).
    std::optional<StreamTail> stderr_tail;
    if (json_output)
        stderr_tail.emplace(std::cerr);
    const std::string command = command_path(app, command_line);
    const bool run_command_parsed =
        command == "eval" || command == "perf" || command == "dryrun" || command == "calibrate";
    auto report = [&](int code) {
        if (json_output && !run_command_parsed && code != 0 && code != kExitFailed)
            std::cout << error_json_line(command, code, stderr_tail->message()) << std::flush;
        return code;
    };
    auto dispatch = [&]() -> int {
        try {
            if (show_version) {
                std::cout << version_text();
                return 0;
            }
            if (problems->parsed())
                return list_problems(problems_json);
#ifdef PKBW_HAVE_GENERATE
            if (auto code = generation->run_parsed())
                return *code;
#endif
            for (int i = 0; i < 4; ++i) {
                if (!run_commands[i]->parsed())
                    continue;
                RunOptions options = run_options[i];
                options.perf = i == 1 || perf_flags[i].perf;
                options.perf_options = perf_json(perf_flags[i]);
                options.launches = perf_flags[i].launches;
                options.min_effect = perf_flags[i].min_effect;
                return run_command(options, store[i], solutions_dir[i], cache_dir[i], phase_timeouts[i],
                                   timeout[i], timeout_scale[i], command_line, json_maps[i]);
            }
            if (import_command->parsed())
                return run_import_pkb(resolve_store_path(import_store).string(), import_dir, import_json,
                                      import_generation);
            if (export_command->parsed())
                return run_export_command(resolve_store_path(export_store).string(), export_run,
                                          export_format, export_output);
            if (bundle_command->parsed()) {
                std::vector<std::int64_t> ids;
                for (std::size_t i = 0; i + 1 < bundle_args.size(); ++i) {
                    std::size_t used = 0;
                    long long id = -1;
                    try {
                        id = std::stoll(bundle_args[i], &used);
                    } catch (const std::exception&) {
                    }
                    if (id < 0 || used != bundle_args[i].size()) {
                        std::cerr << "pkbw export-bundle: '" << bundle_args[i] << "' is not a run id\n";
                        return kExitUsage;
                    }
                    ids.push_back(id);
                }
                return run_export_bundle(resolve_store_path(bundle_store), ids, bundle_sweep,
                                         bundle_args.back(), std::cout, std::cerr);
            }
            if (runs->parsed())
                return list_runs(resolve_store_path(runs_store), query, std::cout, std::cerr);
            if (auto code = store_commands.dispatch())
                return *code;
            if (auto code = sweep_commands.dispatch())
                return *code;
            if (show->parsed() && show_sweep)
                return show_sweep_command(resolve_store_path(show_store), *show_sweep, show_json, std::cout,
                                          std::cerr);
            if (show->parsed() && run_id == 0) {
                std::cerr << "pkbw: show needs a RUN id or --sweep ID\n";
                return kExitUsage;
            }
            if (show->parsed()) {
                int code = show_run(resolve_store_path(show_store), run_id, show_json, std::cout, std::cerr);
#ifdef PKBW_HAVE_GENERATE
                if (code == 0 && !show_json)
                    generation->after_show(resolve_store_path(show_store).string(), run_id);
#endif
                return code;
            }
            std::cout << app.help();
            return kExitUsage;
        } catch (const StoreError& error) {
            std::cerr << "pkbw: " << error.what() << "\n";
            return kExitEnvironment;
        } catch (const std::exception& error) {
            std::cerr << "pkbw: " << error.what() << "\n";
            if (json_output && !run_command_parsed)
                std::cout << error_json_line(command, kExitFailed, error.what()) << std::flush;
            return kExitFailed;
        }
    };
    return report(dispatch());
}
