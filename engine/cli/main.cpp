// pkbw: the command-line program (docs/cli.md). `pkbw eval` and `pkbw dryrun` run a problem's
// candidate (or reference) on W ranks and record the run; `problems`, `runs`, `show` read.
#ifdef PKBW_HAVE_GENERATE
#include "commands.h" // engine/generate: prompt, generate, agent
#endif
#include "bundle_command.h"
#include "cli_errors.h"
#include "export_command.h"
#include "judge_command.h"
#include "launcher.h"
#include "pkb_import.h"
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
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

int list_problems(bool as_json) {
    if (as_json) {
        for (auto problem : problems_json()) {
            problem["event"] = protocol::kProblem;
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

struct ImportCommand {
    CLI::App* app = nullptr;
    std::string dir, generation;
    std::optional<std::string> store;
    bool json = false;

    void add(CLI::App& parent) {
        app =
            parent.add_subcommand("import-pkb", "import a PKB logs folder (rank_<r>.pt, perf JSON) as runs");
        app->add_option("DIR", dir, "PKB logs folder (logs/ or logs/problem_<stem>)")->required();
        app->add_option("--store", store, "SQLite store");
        app->add_flag("--json", json, "JSON lines on stdout");
        app->add_option("--generation", generation,
                        "generation label (solutions_<backend>_<precision>_<hw>_<provider>_<model>)");
    }
    int run() const { return run_import_pkb(resolve_store_path(store).string(), dir, json, generation); }
};

struct ExportCommand {
    CLI::App* app = nullptr;
    std::int64_t run_id = 0;
    std::string format = "chrome-trace", output;
    std::optional<std::string> store;

    void add(CLI::App& parent) {
        app = parent.add_subcommand("export", "export a run's traces (Chrome trace JSON or kernel CSV)");
        app->add_option("RUN", run_id, "run id")->required();
        app->add_option("--format", format, "chrome-trace | csv");
        app->add_option("--output,-o", output, "output file (- for stdout)")->required();
        app->add_option("--store", store, "SQLite store");
    }
    int run() const { return run_export_command(resolve_store_path(store).string(), run_id, format, output); }
};

struct BundleCommand {
    CLI::App* app = nullptr;
    std::vector<std::string> args; // RUN... FILE
    std::optional<std::int64_t> sweep;
    std::optional<std::string> store;

    void add(CLI::App& parent) {
        app = parent.add_subcommand(
            "export-bundle",
            "write runs with their sources and artifacts to one file (pkbw-gui FILE opens it)");
        app->add_option("ARGS", args, "RUN... FILE, or FILE with --sweep")->required();
        app->add_option("--sweep", sweep, "every run of this sweep");
        app->add_option("--store", store, "SQLite store");
    }
    int run() const {
        std::vector<std::int64_t> ids;
        for (std::size_t i = 0; i + 1 < args.size(); ++i) {
            std::size_t used = 0;
            long long id = -1;
            try {
                id = std::stoll(args[i], &used);
            } catch (const std::exception&) {
            }
            if (id < 0 || used != args[i].size()) {
                std::cerr << "pkbw export-bundle: '" << args[i] << "' is not a run id\n";
                return kExitUsage;
            }
            ids.push_back(id);
        }
        return run_export_bundle(resolve_store_path(store), ids, sweep, args.back(), std::cout, std::cerr);
    }
};

struct RunsCommand {
    CLI::App* app = nullptr;
    RunsQuery query;
    std::optional<std::string> store;

    void add(CLI::App& parent) {
        app = parent.add_subcommand("runs", "list recent runs");
        app->add_option("--problem", query.problem, "problem stem or number");
        app->add_option("--status", query.status,
                        "pass, mismatch, compile_error, crash, timeout, error, ...");
        app->add_option("--generation", query.generation, "generation label (solutions_... folder name)");
        app->add_option("--sweep", query.sweep, "the runs of sweep ID");
        app->add_option("--limit", query.limit, "at most this many (default 20)");
        app->add_option("--store", store, "SQLite store");
        app->add_flag(
            "--json", query.json,
            "JSON lines: one {\"event\": \"run\", ...} per run, with its stored perf figures (or null)");
    }
    int run() const { return list_runs(resolve_store_path(store), query, std::cout, std::cerr); }
};

struct ShowCommand {
    CLI::App* app = nullptr;
    std::int64_t run_id = 0;
    bool json = false;
    std::optional<std::int64_t> sweep;
    std::optional<std::string> store;

    void add(CLI::App& parent) {
        app = parent.add_subcommand("show", "print a run with its per-trial, per-rank results");
        app->add_option("RUN", run_id, "run id");
        app->add_option("--sweep", sweep, "show sweep ID's table instead of a run (docs/sweeps.md)");
        app->add_option("--store", store, "SQLite store");
        app->add_flag("--json", json,
                      "one JSON line {\"event\": \"run\", ...} (the stored perf figures under perf); with "
                      "--sweep {\"event\": \"sweep_table\", ...}");
    }
};

// Every command of pkbw, registered on the app in the order `pkbw --help` lists them.
class PkbwCommands {
public:
    // sweep_ is constructed after the members add_own fills (declaration order), and registers
    // sweep, sweeps and `store`, which store_ then extends; prompt, generate and agent come last.
    PkbwCommands(CLI::App& app, const std::vector<std::string>& command_line)
        : app_(app)
        , command_line_(command_line)
        , sweep_(add_own(app))
        , store_(app) {
#ifdef PKBW_HAVE_GENERATE
        generation_ = pkbw::generate::register_commands(app); // prompt, generate, agent
        generation_->set_command_line(command_line);
#endif
    }
    PkbwCommands(const PkbwCommands&) = delete;
    PkbwCommands& operator=(const PkbwCommands&) = delete;

    // The parsed command's exit code; the first test that holds wins, so --version comes first and
    // `show` (whose RUN is optional) last.
    int dispatch() {
        if (show_version_) {
            std::cout << version_text();
            return 0;
        }
        if (problems_->parsed())
            return list_problems(problems_json_);
#ifdef PKBW_HAVE_GENERATE
        if (auto code = generation_->run_parsed())
            return *code;
#endif
        for (const JudgeCommand* judge : {&eval_, &perf_, &dryrun_, &calibrate_, &check_})
            if (judge->app->parsed())
                return judge->run(command_line_);
        if (import_.app->parsed())
            return import_.run();
        if (export_.app->parsed())
            return export_.run();
        if (bundle_.app->parsed())
            return bundle_.run();
        if (runs_.app->parsed())
            return runs_.run();
        if (auto code = store_.dispatch())
            return *code;
        if (auto code = sweep_.dispatch())
            return *code;
        if (show_.app->parsed())
            return show();
        std::cout << app_.help();
        return kExitUsage;
    }

private:
    // The commands this file owns, ahead of sweep and store (SweepCommands registers on construction).
    CLI::App& add_own(CLI::App& app) {
        app.add_flag("--version", show_version_, "print versions (pkbw, CUDA, NCCL) and exit");
        problems_ = app.add_subcommand("problems", "list the problems");
        problems_->add_flag("--json", problems_json_,
                            "JSON lines on stdout: one {\"event\": \"problem\", id, stem, ...} per problem");
        add_judge(app, eval_, "eval", "compare a candidate with the reference over trials", false, true);
        add_judge(app, perf_, "perf", "eval, then time reference and candidate (pkbw's and PKB's protocols)",
                  true, true);
        add_judge(app, dryrun_, "dryrun", "run one side (reference or candidate) once", false, false);
        add_calibrate(app, calibrate_);
        add_check(app, check_);
        import_.add(app);
        export_.add(app);
        bundle_.add(app);
        runs_.add(app);
        show_.add(app);
        return app;
    }

    int show() {
        if (show_.sweep)
            return show_sweep_command(resolve_store_path(show_.store), *show_.sweep, show_.json, std::cout,
                                      std::cerr);
        if (show_.run_id == 0) {
            std::cerr << "pkbw: show needs a RUN id or --sweep ID\n";
            return kExitUsage;
        }
        int code = show_run(resolve_store_path(show_.store), show_.run_id, show_.json, std::cout, std::cerr);
#ifdef PKBW_HAVE_GENERATE
        if (code == 0 && !show_.json)
            generation_->after_show(resolve_store_path(show_.store).string(), show_.run_id);
#endif
        return code;
    }

    CLI::App& app_;
    const std::vector<std::string>& command_line_;
    bool show_version_ = false;
    CLI::App* problems_ = nullptr;
    bool problems_json_ = false;
    JudgeCommand eval_, perf_, dryrun_, calibrate_, check_;
    ImportCommand import_;
    ExportCommand export_;
    BundleCommand bundle_;
    RunsCommand runs_;
    ShowCommand show_;
    SweepCommands sweep_; // sweep, sweeps, store merge
    StoreCommands store_; // store check, store remove, store migrate
#ifdef PKBW_HAVE_GENERATE
    std::unique_ptr<pkbw::generate::Commands> generation_;
#endif
};

// A parse error: its message on stderr (and as a JSON line under --json), exit code kExitUsage.
int parse_failed(CLI::App& app, const CLI::ParseError& error, const std::vector<std::string>& command_line,
                 bool json_output) {
    if (error.get_exit_code() == 0)
        return app.exit(error); // --help
    const std::string message = parse_error_message(app, error, command_line);
    std::cerr << (message.rfind("pkbw", 0) == 0 ? "" : "pkbw: ") << message << "\n";
    if (json_output)
        std::cout << error_json_line(command_path(app, command_line), kExitUsage, message) << std::flush;
    return kExitUsage;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> command_line(argv, argv + argc);
    CLI::App app{"pkbw: evaluate multi-GPU kernels against ParallelKernelBench references"};
    app.require_subcommand(0, 1);
    PkbwCommands commands(app, command_line);

    const bool json_output = wants_json(command_line);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return parse_failed(app, error, command_line, json_output);
    }
    // Under --json an error the command printed on stderr also goes out as one JSON line (cli_errors.h).
    std::optional<StreamTail> stderr_tail;
    if (json_output)
        stderr_tail.emplace(std::cerr);
    const std::string command = command_path(app, command_line);
    // The judging commands write their own JSON error lines (run.h); check its check_finished line.
    const bool run_command_parsed = command == "eval" || command == "perf" || command == "dryrun" ||
                                    command == "calibrate" || command == "check";
    int code = 0;
    try {
        code = commands.dispatch();
    } catch (const StoreError& error) {
        std::cerr << "pkbw: " << error.what() << "\n";
        code = kExitEnvironment;
    } catch (const std::exception& error) {
        std::cerr << "pkbw: " << error.what() << "\n";
        if (json_output && !run_command_parsed)
            std::cout << error_json_line(command, kExitFailed, error.what()) << std::flush;
        code = kExitFailed;
    }
    if (json_output && !run_command_parsed && code != 0 && code != kExitFailed)
        std::cout << error_json_line(command, code, stderr_tail->message()) << std::flush;
    return code;
}
