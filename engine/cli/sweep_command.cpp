#include "sweep_command.h"

#include "pkbw/core/error.h"
#include "pkbw/core/generation.h"
#include "pkbw/core/paths.h"
#include "pkbw/core/store_merge.h"
#include "run.h"
#include "signals.h"
#include "store_recorder.h"
#include "sweep_plan.h"
#include "sweep_report.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace pkbw::cli {
namespace {

fs::path self_executable() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path("pkbw") : exe;
}

SweepContext make_context(const SweepFlags& flags, const fs::path& store_path, const SweepRecord& sweep) {
    SweepContext context;
    context.store_path = fs::absolute(store_path);
    context.cache_dir = fs::absolute(flags.cache_dir ? fs::path(*flags.cache_dir) : default_cache_root());
    context.pkbw = self_executable();
    context.work_dir = context.store_path.parent_path() / "sweeps" / sweep.uuid;
    context.json = flags.json;
    context.terminal = !flags.json && ::isatty(STDOUT_FILENO);
    context.jobs = flags.jobs;
    context.perf_concurrent = flags.perf_concurrent;
    context.runs_per_gpu = flags.runs_per_gpu;
    context.prefetch_compiles = !flags.no_prefetch;
    return context;
}

json unplaced_json(const std::vector<UnplacedFile>& files) {
    json unplaced = json::array();
    for (const auto& u : files)
        unplaced.push_back({{"generation", u.generation_label}, {"file", u.file}, {"reason", u.reason}});
    return unplaced;
}

void print_plan(std::ostream& out, const SweepPlan& plan, bool as_json) {
    const json unplaced = unplaced_json(plan.unplaced);
    if (as_json) {
        json pairs = json::array();
        for (const auto& p : plan.pairs)
            pairs.push_back({{"generation", p.generation_label},
                             {"problem", p.problem_stem},
                             {"solution", p.solution_path},
                             {"placed_by", p.placed_by}});
        out << json{{"event", "sweep_plan"},
                    {"pairs", pairs},
                    {"mapping", plan.mapping},
                    {"unplaced", unplaced},
                    {"unplaced_elsewhere", unplaced_json(plan.unplaced_elsewhere)},
                    {"missing", plan.missing}}
                   .dump()
            << "\n";
        return;
    }
    for (const auto& p : plan.pairs)
        out << "  " << p.generation_label << "/" << fs::path(p.solution_path).filename().string() << " -> "
            << p.problem_stem << (p.placed_by == "name" ? "" : " (" + p.placed_by + ")") << "\n";
    for (const auto& u : plan.unplaced)
        out << "  not placed: " << u.generation_label << "/" << u.file << ": " << u.reason << "\n";
    out << plan.pairs.size() << (plan.pairs.size() == 1 ? " pair" : " pairs") << " planned";
    if (!plan.unplaced.empty())
        out << "; " << plan.unplaced.size() << (plan.unplaced.size() == 1 ? " file" : " files")
            << " not placed (--place FILE=PROBLEM places one by hand)";
    if (!plan.unplaced_elsewhere.empty())
        out << "; " << plan.unplaced_elsewhere.size()
            << (plan.unplaced_elsewhere.size() == 1 ? " file" : " files")
            << " not placed that concern no selected problem (--json lists them)";
    out << "\n";
}

} // namespace

SweepCommands::SweepCommands(CLI::App& app) {
    sweep_ = app.add_subcommand("sweep", "run every (generation, problem) pair into the store as one sweep");
    auto& f = flags_;
    sweep_->add_option("--solutions-dir", f.solutions_dirs, "generation folders (one or more)");
    sweep_->add_option("--problems", f.problems, "all | N | A-B | a comma list (default all)");
    sweep_->add_option("--mode", f.mode, "eval | perf")->check(CLI::IsMember({"eval", "perf"}));
    sweep_->add_option("--nproc,--nproc-per-node,--num-gpus", f.nproc, "ranks per run W");
    sweep_->add_option("--backend", f.backend, "cuda | host (default: cuda when a GPU is present)")
        ->check(CLI::IsMember({"cuda", "host"}));
    sweep_->add_option("--pkb-checkout", f.pkb_checkout, "run PKB's Python solutions against this checkout");
    sweep_->add_option("--python", f.python, "interpreter for PKB solutions");
    sweep_->add_option("--arch", f.arch, "nvcc -arch (cuda)");
    sweep_->add_option("--name", f.name, "the sweep's name; a sweep of this name with pairs left is resumed");
    sweep_->add_option("--resume", f.resume, "resume sweep ID: run its pairs that are not judged yet");
    sweep_->add_option("--jobs,-j", f.jobs, "at most this many runs at once (host default: the cores / W)");
    sweep_
        ->add_option(
            "--runs-per-gpu", f.runs_per_gpu,
            "eval: at most this many runs share each GPU (slot) at once, their compiles and start-up "
            "overlapping (1; perf never shares)")
        ->check(CLI::Range(1, 64));
    sweep_->add_flag("--perf-concurrent", f.perf_concurrent,
                     "perf: time G/W runs at once on disjoint GPUs (they share the NVSwitch fabric)");
    sweep_->add_flag("--no-prefetch", f.no_prefetch, "do not compile upcoming pairs ahead of their runs");
    sweep_->add_option("--place", f.place,
                       "FILE=PROBLEM: place a file the name rules leave unplaced (repeatable)");
    sweep_->add_flag("--plan", f.plan_only, "print the pairs and the file-to-problem mapping; run nothing");
    sweep_->add_flag("--json", f.json, "JSON lines on stdout");
    sweep_->add_option("--store", f.store, "SQLite store");
    sweep_->add_option("--cache-dir", f.cache_dir, "compile cache root");
    sweep_->add_flag("--slurm", f.cluster.slurm, "submit the pairs as a SLURM job array (sbatch)");
    sweep_->add_option("--partition", f.cluster.partition, "SLURM partition");
    sweep_->add_option("--account", f.cluster.account, "SLURM account");
    sweep_->add_option("--gres", f.cluster.gres, "SLURM --gres of each task (gpu:W)");
    sweep_->add_option("--time", f.cluster.time_limit, "SLURM --time of each task");
    sweep_->add_option("--array-throttle", f.cluster.array_throttle, "at most K array tasks at once (%K)");
    sweep_->add_option("--chunk", f.cluster.chunk, "pairs per task (default 1)");
    sweep_->add_option("--sbatch", f.cluster.sbatch, "the sbatch program (default sbatch)");
    sweep_->add_flag("--wait", f.cluster.wait, "wait for the collecting job to finish");
    sweep_->add_option("--remote", f.cluster.remote,
                       "run each task through this command template ({i} index, {n} count, {cmd} the task)");
    sweep_->add_option("--local-dir", f.local_dir,
                       "tasks: the node-local folder for their stores (default $TMPDIR)");
    sweep_->add_option("--collect", f.collect, "merge the published task stores of sweep ID");
    sweep_->add_option("--task", f.task_file, "(used by submitted tasks) the submission file");
    sweep_->add_option("--task-index", f.task_index, "(used by submitted tasks) which task");
    sweep_->add_option("run_args", f.run_args, "flags given to every run, after --: -- --trials 2 --no-pkb");

    sweeps_ = app.add_subcommand("sweeps", "list the sweeps of the store");
    sweeps_->add_option("--store", sweeps_store_, "SQLite store");
    sweeps_->add_flag("--json", sweeps_json_, "JSON lines: one {\"event\": \"sweep\", ...} per sweep");

    store_ = app.add_subcommand("store", "store maintenance");
    merge_ =
        store_->add_subcommand("merge", "merge run stores into one (run ids remapped, run folders copied)");
    merge_->add_option("INPUTS", merge_inputs_, "input stores")->required();
    merge_->add_option("--into", merge_into_, "the target store (created when missing)")->required();
    merge_->add_flag("--json", merge_json_, "one JSON line {\"event\": \"store_merged\", runs, ...}");
    store_->require_subcommand(1);
}

std::optional<int> SweepCommands::dispatch() {
    if (sweeps_->parsed())
        return list_sweeps_command(resolve_store_path(sweeps_store_), sweeps_json_, std::cout, std::cerr);
    if (merge_->parsed()) {
        std::vector<fs::path> inputs(merge_inputs_.begin(), merge_inputs_.end());
        try {
            MergeReport report = merge_stores(inputs, merge_into_);
            for (const auto& w : report.warnings)
                std::cerr << "pkbw: warning: " << w << "\n";
            if (merge_json_)
                std::cout << json{{"event", "store_merged"},   {"runs", report.runs},
                                  {"sweeps", report.sweeps},   {"pairs", report.pairs},
                                  {"folders", report.folders}, {"warnings", report.warnings}}
                                 .dump()
                          << "\n";
            else
                std::cout << "merged " << inputs.size() << " stores into " << merge_into_ << ": "
                          << report.runs << " runs, " << report.folders << " run folders, " << report.sweeps
                          << " new sweeps, " << report.pairs << " sweep pairs filled\n";
            return 0;
        } catch (const StoreError& error) {
            std::cerr << "pkbw: " << error.what() << "\n";
            return kExitFailed;
        }
    }
    if (sweep_->parsed())
        return sweep();
    return std::nullopt;
}

namespace {

// The sweep's row: what it runs and how, the plan's mapping and what was left out (docs/sweeps.md).
SweepRecord new_sweep_record(const SweepFlags& f, const SweepPlan& plan, const std::string& backend) {
    SweepRecord record;
    record.name = f.name;
    record.mode = f.mode;
    record.backend = f.pkb_checkout ? "pkb-python" : backend;
    record.world_size = f.nproc;
    const json unplaced = unplaced_json(plan.unplaced);
    json dirs = json::array();
    for (const auto& d : f.solutions_dirs)
        dirs.push_back(fs::absolute(d).string());
    record.options = {{"solutions_dirs", dirs},
                      {"problems", f.problems},
                      {"run_args", f.run_args},
                      {"mapping", plan.mapping},
                      {"unplaced", unplaced},
                      {"missing", plan.missing},
                      {"unplaced_elsewhere", unplaced_json(plan.unplaced_elsewhere)}};
    if (!f.arch.empty()) {
        record.options["arch"] = f.arch;
        record.options["run_args"].push_back("--arch");
        record.options["run_args"].push_back(f.arch);
    }
    if (f.pkb_checkout) {
        record.options["pkb_checkout"] = fs::absolute(*f.pkb_checkout).string();
        record.options["python"] = f.python;
        record.options["run_backend"] = f.backend;
    }
    return record;
}

// The pairs of the folders given, placed by the name rules (and --place); `backend` becomes the one
// the runs use. Throws pkbw::Error on a problem selection or --place it cannot read.
SweepPlan plan_from_flags(const SweepFlags& f, std::string& backend) {
    const auto known = f.pkb_checkout ? pkb_checkout_problems(*f.pkb_checkout) : native_problems();
    const auto selected = parse_problem_selection(f.problems, known);
    std::string extension = ".py";
    if (!f.pkb_checkout) {
        if (backend.empty())
            backend = gpu_present() ? "cuda" : "host";
        extension = backend == "cuda" ? ".cu" : ".cpp";
    }
    const std::vector<fs::path> dirs(f.solutions_dirs.begin(), f.solutions_dirs.end());
    return plan_sweep(dirs, known, selected, extension, parse_place_flags(f.place));
}

void announce_sweep(std::ostream& out, const SweepRecord& sweep, std::size_t pending,
                    const fs::path& store_path, bool as_json) {
    if (as_json)
        out << json{{"event", "sweep_started"}, {"sweep_id", sweep.id}, {"uuid", sweep.uuid},
                    {"pending", pending},       {"mode", sweep.mode},   {"world_size", sweep.world_size},
                    {"backend", sweep.backend}}
                   .dump()
            << "\n";
    else
        out << "sweep " << sweep.id << ": " << pending << (pending == 1 ? " pair" : " pairs") << " to run, "
            << sweep.mode << ", W=" << sweep.world_size << ", " << sweep.backend << " (store "
            << store_path.string() << ")\n";
}

} // namespace

int SweepCommands::sweep() {
    auto& f = flags_;
    f.cluster.local_dir = f.local_dir;
    SignalScope signals;
    if (f.task_file) {
        if (f.task_index < 0) {
            std::cerr << "pkbw: --task needs --task-index\n";
            return kExitUsage;
        }
        return run_sweep_task(*f.task_file, f.task_index, f.cluster, f.json, std::cout, std::cerr);
    }
    const auto refuse_sharing = [&] {
        std::cerr
            << "pkbw: --runs-per-gpu " << f.runs_per_gpu
            << " would share GPUs between timed runs (--mode perf, or --perf for every run), which timing "
               "never does; it applies to eval sweeps\n";
        return kExitUsage;
    };
    if (f.runs_per_gpu > 1 && sweep_times(f.mode, f.run_args))
        return refuse_sharing();
    const fs::path store_path = resolve_store_path(f.store);
    Store store = Store::open(store_path);
    store.mark_stale_runs_aborted();
    if (f.collect)
        return collect(store, store_path);
    std::optional<SweepRecord> sweep;
    if (const auto ended = find_or_create_sweep(store, store_path, sweep))
        return *ended;
    if (f.runs_per_gpu > 1 &&
        sweep_times(*sweep)) // a resumed sweep keeps the mode and flags it was made with
        return refuse_sharing();
    const SweepContext context = make_context(f, store_path, *sweep);
    announce_sweep(std::cout, *sweep, pending_pairs(store, sweep->id).size(), store_path, f.json);
    if (f.cluster.slurm || !f.cluster.remote.empty()) {
        const int code = submit_sweep(store, *sweep, context, f.cluster, std::cout, std::cerr);
        if (code == 0 && (!f.cluster.slurm || f.cluster.wait)) {
            Store reread = Store::open_read_only(store_path);
            print_sweep_table(std::cout, sweep_table(reread, sweep->id), default_fast_p());
        }
        return code;
    }
    return run_here(store, *sweep, context);
}

int SweepCommands::collect(Store& store, const fs::path& store_path) {
    auto sweep = find_sweep(store, *flags_.collect);
    if (!sweep) {
        std::cerr << "pkbw: no sweep " << *flags_.collect << " in " << store_path.string() << "\n";
        return kExitUsage;
    }
    const int failed =
        collect_sweep(store, *sweep, make_context(flags_, store_path, *sweep), std::cout, std::cerr);
    print_sweep_table(std::cout, sweep_table(store, sweep->id), default_fast_p());
    return failed == 0 ? 0 : kExitFailed;
}

std::optional<int> SweepCommands::find_or_create_sweep(Store& store, const fs::path& store_path,
                                                       std::optional<SweepRecord>& sweep) {
    const auto& f = flags_;
    if (f.resume) {
        sweep = find_sweep(store, *f.resume);
        if (!sweep) {
            std::cerr << "pkbw: no sweep " << *f.resume << " in " << store_path.string() << "\n";
            return kExitUsage;
        }
        return std::nullopt;
    }
    if (!f.name.empty()) {
        sweep = find_sweep_by_name(store, f.name);
        if (sweep) {
            if (!f.json)
                std::cout << "resuming sweep " << sweep->id << " '" << f.name << "'\n";
            return std::nullopt;
        }
    }
    if (f.solutions_dirs.empty() || f.nproc <= 0) {
        std::cerr << "pkbw: sweep needs --solutions-dir and --nproc (or --resume ID)\n";
        return kExitUsage;
    }
    SweepPlan plan;
    std::string backend = f.backend;
    try {
        plan = plan_from_flags(f, backend);
    } catch (const Error& error) {
        std::cerr << "pkbw: " << error.what() << "\n";
        return kExitUsage;
    }
    if (f.plan_only) {
        print_plan(std::cout, plan, f.json);
        return 0;
    }
    if (plan.pairs.empty()) {
        print_plan(std::cerr, plan, false);
        std::cerr << "pkbw: sweep: no solution file placed at a selected problem\n";
        return kExitUsage;
    }
    const std::int64_t id = create_sweep(store, new_sweep_record(f, plan, backend), plan.pairs);
    sweep = find_sweep(store, id);
    if (f.json)
        print_plan(std::cout, plan, true);
    else {
        for (const auto& u : plan.unplaced)
            std::cout << "not placed: " << u.generation_label << "/" << u.file << ": " << u.reason << "\n";
        if (!plan.unplaced_elsewhere.empty())
            std::cout << "not placed: " << plan.unplaced_elsewhere.size()
                      << (plan.unplaced_elsewhere.size() == 1 ? " file" : " files")
                      << " that concern no selected problem (--json lists them)\n";
    }
    return std::nullopt;
}

int SweepCommands::run_here(Store& store, const SweepRecord& sweep, const SweepContext& context) {
    ExecuteResult result;
    try {
        set_sweep_status(store, sweep.id, sweep_status::kRunning);
        result = execute_sweep(store, sweep, context, std::cout);
    } catch (const Error& error) {
        std::cerr << "pkbw: " << error.what() << "\n";
        set_sweep_status(store, sweep.id, sweep_status::kInterrupted);
        return kExitEnvironment;
    }
    const bool complete = pending_pairs(store, sweep.id).empty();
    set_sweep_status(store, sweep.id,
                     result.interrupted ? sweep_status::kInterrupted
                     : complete         ? sweep_status::kDone
                                        : sweep_status::kIncomplete);
    const auto table = sweep_table(store, sweep.id);
    if (flags_.json) {
        json finished = sweep_json(table, default_fast_p());
        finished["event"] = "sweep_finished";
        std::cout << finished.dump() << "\n";
    } else {
        std::cout << "\n";
        print_sweep_table(std::cout, table, default_fast_p());
        if (!complete)
            std::cout << "\n"
                      << (table.total - table.done) << (table.total - table.done == 1 ? " pair" : " pairs")
                      << " not judged; resume: pkbw sweep --resume " << sweep.id << "\n";
    }
    return result.interrupted ? kExitInterrupted : 0;
}

} // namespace pkbw::cli
