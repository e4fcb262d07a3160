#include "run.h"

#include "compile_cache.h"
#include "elf_symbols.h"
#include "fd.h"
#include "locate.h"
#include "perf_report.h"
#include "pkbw/core/dtype.h"
#include "pkbw/core/error.h"
#include "pkbw/core/generation.h"
#include "pkbw/core/kineto.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/sha256.h"
#include "pkbw/core/status.h"
#include "pkbw/core/store.h"
#include "pkbw/core/trace.h"
#include "pkbw/core/trace_analysis.h"
#include "pkbw/problems/registry.h"
#include "pkbw/tracer_control.h"
#include "python_flags.h"
#include "run_report.h"
#include "run_session.h"
#include "safety.h"
#include "signals.h"
#include "suggest.h"
#include "sweep_plan.h"
#include "trust_report.h"
#include "version.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <ostream>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace pkbw::cli {
namespace detail {

std::string host_name() {
    char buffer[256] = {};
    ::gethostname(buffer, sizeof buffer - 1);
    return buffer;
}

std::string run_dir_name(const std::string& stem) {
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    return std::string(stamp) + "-" + stem + "-" + random_token().substr(0, 8);
}

} // namespace detail

using namespace detail;

namespace {

bool looks_like_path(const std::string& text) {
    return text.find('/') != std::string::npos || text.ends_with(".cu") || text.ends_with(".cpp") ||
           text.ends_with(".cc");
}

// State of one run once it has a row in the store.
} // namespace

namespace detail {

void Run::begin(int problem_id, const std::string& stem, const std::string& solution_path,
                bool is_reference) {
    start_.problem_id = problem_id;
    start_.problem_stem = stem;
    start_.mode = options_.mode;
    start_.backend = backend_;
    start_.world_size = options_.nproc;
    start_.dtype = std::string(dtype_name(dtype_));
    start_.m = options_.m;
    start_.n = options_.n;
    start_.atol = atol_;
    start_.rtol = rtol_;
    start_.trials = options_.mode == "dryrun" ? 1 : options_.trials;
    start_.seed = options_.seed;
    start_.solution_path = solution_path;
    start_.solution_is_reference = is_reference;
    std::error_code ec;
    if (!solution_path.empty() && fs::is_regular_file(solution_path, ec)) {
        start_.solution_sha256 = sha256_file_hex(solution_path);
        start_.generation_folder = fs::absolute(solution_path).parent_path().filename().string();
    }
    start_.command_line = options_.command_line;
    start_.host = host_name();
    run_dir_ = options_.runs_dir / run_dir_name(stem_);
    start_.run_dir = run_dir_.string();
    recorder_.mark_stale_runs_aborted();
    remove_orphaned_shm_segments(); // of launchers killed outright (their ranks died with them)
    remove_orphaned_candidate_directories(); // of judges that died without removing them
    run_id_ = recorder_.begin_run(start_);
    begun_ = true;
    fs::create_directories(run_dir_, ec);
    // The code that ran travels with the run (docs/store.md "Archived files").
    if (!start_.solution_sha256.empty())
        recorder_.archive(run_id_,
                          {is_reference ? "reference_source" : "candidate_source",
                           fs::absolute(solution_path).string(), "", "", std::nullopt, std::nullopt});
    emit({{"event", protocol::kRunStarted},
          {"run_id", run_id_},
          {"problem", stem_},
          {"mode", options_.mode},
          {"backend", backend_},
          {"world_size", options_.nproc},
          {"solution", solution_path},
          {"run_dir", run_dir_.string()}});
}

json Run::flags_json() const {
    json flags = json::array();
    for (const auto& flag : candidate_flags_)
        flags.push_back({{"severity", flag.severity}, {"text", flag.text}, {"reason", flag.reason}});
    return flags;
}

json Run::info_json() const {
    json info = json::array();
    for (const auto& flag : candidate_flags_)
        if (flag.severity == "info")
            info.push_back(flag.text);
    return info;
}

std::vector<FlagRecord> Run::flag_records(const Verdict* verdict) const {
    std::vector<FlagRecord> flags;
    for (const auto& flag : candidate_flags_)
        flags.push_back({flag.severity, flag.text, flag.reason});
    if (verdict) {
        for (const auto& warning : verdict->warnings) {
            // A suspect code flag is also one of the verdict's warnings: once, with its severity.
            const bool flagged = std::any_of(candidate_flags_.begin(), candidate_flags_.end(),
                                             [&](const auto& flag) { return flag.text == warning; });
            if (!flagged)
                flags.push_back({"warning", warning, ""});
        }
    }
    return flags;
}

int Run::finish(const std::string& status, int exit_code, const std::string& summary,
                const Verdict* verdict) {
    if (begun_) {
        recorder_.set_flags(run_id_, flag_records(verdict));
        recorder_.finish_run(run_id_, status, exit_code, summary);
    }
    if (options_.json) {
        emit({{"event", protocol::kRunFinished},
              {"run_id", run_id_},
              {"status", status},
              {"exit_code", exit_code},
              {"message", summary},
              {"trials", verdict ? trials_json(*verdict) : json::array()},
              {"warnings", verdict ? json(verdict->warnings) : json::array()},
              {"flags", flags_json()},
              {"info", info_json()},
              {"perf", perf_json_}});
    } else {
        if (verdict) {
            print_trials(*verdict, out_, compares());
            if (compares())
                out_ << (status == status::kPass ? "all trials match" : status) << "\n";
            for (const auto& warning : verdict->warnings)
                out_ << "warning: " << warning << "\n";
            for (const auto& flag : candidate_flags_)
                if (flag.severity == "info")
                    out_ << "info: " << flag.text << " (" << flag.reason << ")\n";
        }
        // Before the run exists fail() has printed the message on stderr: not twice.
        out_ << (begun_ ? "run " + std::to_string(run_id_) + ": " : std::string()) << status << " (exit "
             << exit_code << ")" << (summary.empty() || !begun_ ? "" : " | " + summary) << "\n";
        if (begun_)
            out_ << "  run directory: " << run_dir_.string() << "\n";
    }
    return exit_code;
}

json Run::rank_config(const fs::path& reference_lib, const fs::path& candidate_lib) const {
    json config = {{"version", 1},
                   {"run_id", run_id_},
                   {"problem", stem_},
                   {"mode", options_.mode},
                   {"backend", backend_},
                   {"world_size", options_.nproc},
                   {"m", options_.m},
                   {"n", options_.n},
                   {"dtype", dtype_name(dtype_)},
                   {"trials", options_.mode == "dryrun" ? 1 : options_.trials},
                   {"seed", options_.seed},
                   {"input_mode", options_.inputs},
                   {"atol", atol_},
                   {"rtol", rtol_},
                   {"all_trials", options_.all_trials},
                   {"keep_outputs", options_.keep_outputs},
                   {"keep_inputs", options_.keep_inputs},
                   {"dryrun_side", start_.solution_is_reference ? "reference" : "candidate"},
                   {"output_dir", run_dir_.string()}};
    if (options_.trace_iterations > 0)
        config["trace"] = {{"dir", (run_dir_ / "trace").string()}, {"iterations", options_.trace_iterations}};
    if (options_.perf || options_.mode == "perf") {
        config["perf"] = options_.perf_options.is_object() ? options_.perf_options : json::object();
        config["perf"]["launch_index"] = 0;
        config["perf"]["launch_seed"] = launch_seed(0);
        config["perf"]["reference_first"] = reference_first(0);
    }
    if (!reference_lib.empty())
        config["reference_library"] = reference_lib.string();
    if (!candidate_lib.empty())
        config["candidate_library"] = candidate_lib.string();
    return config;
}

void Run::record_results(const LaunchOutcome& launch, const Verdict& verdict) {
    RunEnvironment environment;
    for (const auto& [rank, hello] : hellos_) {
        environment.gpu_names.push_back(json_text(hello, "device"));
        if (environment.driver_version.empty())
            environment.driver_version = json_text(hello, "driver");
        if (environment.cuda_runtime_version.empty())
            environment.cuda_runtime_version = json_text(hello, "runtime");
        if (environment.nccl_runtime_version.empty())
            environment.nccl_runtime_version = json_text(hello, "nccl_runtime");
        if (environment.nccl_compiled_version.empty())
            environment.nccl_compiled_version = json_text(hello, "nccl_compiled");
    }
    recorder_.set_environment(run_id_, environment);
    // A rank_result's status (core/status.h) as the store's rank outcome: a pass is stored as "ok".
    static const std::map<std::string_view, RankOutcome> outcomes = {
        {status::kPass, RankOutcome::Ok},
        {status::kMismatch, RankOutcome::Mismatch},
        {status::kInvalidOutput, RankOutcome::InvalidOutput},
        {status::kError, RankOutcome::Error},
        {status::kCrash, RankOutcome::Crash}};
    for (const auto& [trial, ranks] : verdict.trials) {
        for (const auto& [rank, result] : ranks) {
            const std::string status = json_text(result, "status", std::string(status::kError));
            const auto found = outcomes.find(status);
            const std::string outcome(
                to_string(found != outcomes.end() ? found->second : RankOutcome::Error));
            recorder_.add_rank_result(run_id_, {trial, rank, outcome, std::string(status::kPhaseCompare),
                                                json_text(result, "message"), std::nullopt, std::nullopt});
            std::string source = "rank " + std::to_string(rank) + " trial " + std::to_string(trial);
            for (const auto& tensor : result.value("tensors", json::array())) {
                try {
                    recorder_.add_tensor_result(
                        run_id_, {trial, rank, protocol::tensor_comparison_from_json(tensor, source)});
                } catch (const FormatError& error) {
                    err_ << "pkbw: " << error.what() << "\n";
                }
            }
            const auto outputs = result.value("outputs", json::object());
            for (const auto& [side, path] : outputs.items()) {
                if (path.is_string() && !path.get<std::string>().empty())
                    recorder_.add_artifact(run_id_,
                                           {trial, rank, "outputs_" + side, path.get<std::string>()});
            }
        }
    }
    // Ranks that ended without a verdict for the trial they were in (timeout, crash, interrupt).
    if (launch.end != LaunchEnd::Completed) {
        for (const auto& report : launch.ranks) {
            int trial = std::max(report.trial, 0);
            bool culprit =
                std::count(launch.culprit_ranks.begin(), launch.culprit_ranks.end(), report.rank) > 0;
            if (verdict.trials.count(trial) && verdict.trials.at(trial).count(report.rank)) {
                // The rank had already reported the trial it was in: a bystander has nothing to add,
                // but a culprit failed after that result (between trials, in perf or trace, before
                // teardown). Its row must exist and must not overwrite the trial's verdict.
                if (!culprit)
                    continue;
                trial = kAfterLastResult;
            }
            const RankOutcome ended = !culprit                           ? RankOutcome::Skipped
                                      : launch.end == LaunchEnd::Timeout ? RankOutcome::Timeout
                                      : launch.end == LaunchEnd::Crash   ? RankOutcome::Crash
                                                                         : RankOutcome::Error;
            const std::string outcome(to_string(ended));
            std::optional<int> code, signal;
            if (report.signal != 0)
                signal = report.signal;
            else if (report.exit_code >= 0)
                code = report.exit_code;
            recorder_.add_rank_result(run_id_, {trial, report.rank, outcome, report.phase,
                                                culprit ? launch.message : report.last_error, code, signal});
        }
    }
    for (const auto& report : launch.ranks) {
        recorder_.add_artifact(run_id_, {std::nullopt, report.rank, "log", report.log_path.string()});
        recorder_.archive(run_id_, {"rank_log", report.log_path.string(), "", "", std::nullopt, report.rank});
    }
}

int Run::execute() {
    if (options_.mode == "calibrate")
        return calibrate();
    if (options_.mode != "eval" && options_.mode != "dryrun" && options_.mode != "perf")
        return fail(to_string(RunStatus::Error), kExitUsage, "unknown mode '" + options_.mode + "'");
    if (options_.nproc < 1)
        return fail(to_string(RunStatus::Error), kExitUsage, "--nproc must be at least 1");
    if (options_.trials < 1)
        return fail(to_string(RunStatus::Error), kExitUsage, "--trials must be at least 1");
    if (!options_.dtype.empty()) {
        auto dtype = parse_dtype(options_.dtype);
        if (!dtype)
            return fail(to_string(RunStatus::Error), kExitUsage, "unknown dtype '" + options_.dtype + "'");
        dtype_ = *dtype;
    }
    if (options_.inputs != "pkb" && options_.inputs != "exact")
        return fail(to_string(RunStatus::Error), kExitUsage,
                    "--inputs must be pkb or exact, not '" + options_.inputs + "'");
    if (options_.pkb_checkout)
        return execute_pkb();
    if (options_.solution.empty())
        return fail(to_string(RunStatus::Error), kExitUsage,
                    "--solution is required: a backend name (with --solutions-dir) or a file");
    const Problem* problem = find_problem(options_.problem);
    if (!problem)
        return fail(to_string(RunStatus::Error), kExitUsage, unknown_problem_message(options_.problem));
    stem_ = problem->info().stem;
    problem_ = problem;
    atol_ = options_.atol.value_or(problem->info().atol);
    rtol_ = options_.rtol.value_or(problem->info().rtol);

    // The backend: asked for, else implied by a solution file's extension, else cuda when a GPU is here.
    backend_ = options_.backend;
    if (backend_.empty() && looks_like_path(options_.solution))
        backend_ = options_.solution.ends_with(".cu") ? "cuda" : "host";
    if (backend_.empty())
        backend_ = gpu_present() ? "cuda" : "host";

    // From here on the run is recorded, whatever happens.
    aa_ = options_.solution == "reference" && options_.mode == "perf";
    const bool is_reference = options_.solution == "reference" && !aa_;
    std::string solution_path;
    std::string usage_error;
    fs::path dir = options_.solutions_dir.value_or(fs::path("solutions_" + options_.solution));
    std::error_code ec;
    if (backend_ != "cuda" && backend_ != "host") {
        usage_error = "--backend must be cuda or host, not '" + backend_ + "'";
    } else if (options_.solution == "reference") {
        if (!aa_ && compares())
            usage_error = "eval compares a candidate with the reference: --solution reference is only for dryrun "
                          "and perf (the reference timed against itself)";
    } else if (looks_like_path(options_.solution) || fs::is_regular_file(options_.solution, ec)) {
        // A file: its name must not name another problem (sweep_plan.h), unless --ignore-name.
        solution_path = options_.solution;
        if (!fs::is_regular_file(solution_path, ec))
            usage_error = "solution file not found: " + solution_path;
        else if (!options_.place.empty())
            usage_error = "--place places the files of --solutions-dir; a file given as --solution is run as "
                          "--problem says (with --ignore-name where its name says otherwise)";
        else if (!options_.ignore_name)
            usage_error = solution_name_refusal(solution_path, native_problems(), stem_);
    } else if (!fs::is_directory(dir, ec)) {
        usage_error = "solutions directory not found: " + dir.string();
    } else {
        // The file the sweep's name rules place at this problem among the folder's _<name> files.
        const std::string extension = backend_ == "cuda" ? ".cu" : ".cpp";
        const SolutionLookup lookup =
            find_solution_file(dir, native_problems(), stem_, options_.solution, extension, options_.place);
        solution_path = lookup.file.empty() ? (dir / (stem_ + "_" + options_.solution + extension)).string()
                                            : lookup.file.string();
        usage_error = lookup.error;
        if (!lookup.note.empty())
            err_ << "pkbw: " << lookup.note << "\n";
    }
    // Generated solutions target one precision, named in their folder (PKB's generation naming).
    if (options_.dtype.empty() && !solution_path.empty()) {
        auto label = parse_generation_label(fs::absolute(solution_path).parent_path().filename().string());
        if (auto dtype = parse_dtype(label.precision); label.parsed && dtype)
            dtype_ = *dtype;
    }
    try {
        layout_ = locate_data();
    } catch (const Error& error) {
        begin(problem, solution_path, is_reference);
        return fail(to_string(RunStatus::Error), kExitEnvironment, error.what());
    }
    fs::path reference_source = layout_->problem_dir(problem_folder(*problem)) /
                                (backend_ == "cuda" ? "reference.cu" : "reference_host.cpp");
    if (is_reference || aa_)
        solution_path = reference_source.string();
    begin(problem, solution_path, is_reference);
    if (!usage_error.empty())
        return fail(to_string(RunStatus::Error), kExitUsage, usage_error);
    ProblemConfig config{options_.nproc,
                         options_.m,
                         options_.n,
                         dtype_,
                         0,
                         options_.seed,
                         options_.inputs == "exact" ? InputMode::Exact : InputMode::Pkb};
    if (auto why = problem->check_config(config))
        return fail(to_string(RunStatus::Error), kExitUsage,
                    why->starts_with(stem_ + ":") ? *why : stem_ + ": " + *why);
    for (int rank = 0; rank < options_.nproc; ++rank) {
        std::uint64_t bytes = 0;
        for (const TensorSpec& spec : problem->input_specs(config, rank))
            bytes += spec_bytes(spec);
        input_bytes_ = std::max(input_bytes_, bytes);
    }
    if (backend_ == "cuda" && !gpu_present())
        return fail(to_string(RunStatus::Error), kExitEnvironment,
                    "the cuda backend needs a GPU and /dev/nvidia0 is absent (--backend host)");
    if (!fs::is_regular_file(reference_source, ec))
        return fail(to_string(RunStatus::Error), kExitEnvironment,
                    "the problem's reference is missing: " + reference_source.string());

    if (!options_.json) {
        out_ << "pkbw " << options_.mode << "\n  Problem:  " << stem_ << " (" << problem->info().category
             << ") " << problem->info().title << "\n  Solution: " << options_.solution << "  ("
             << solution_path << ")\n"
             << "  Backend:  " << backend_ << "  nproc: " << options_.nproc << "\n  Shape:    (" << options_.m
             << ", " << options_.n << ")  dtype=" << dtype_name(dtype_) << "  inputs=" << options_.inputs
             << "\n";
        if (compares())
            out_ << "  Trials:   " << options_.trials << "  atol=" << atol_ << " rtol=" << rtol_ << "\n";
    }
    if (!is_reference) {
        std::ifstream in(solution_path);
        std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (const std::string refusal = nccl_device_api_refusal(source);
            !refusal.empty() && backend_ == "cuda")
            return fail(to_string(RunStatus::Error), kExitEnvironment, refusal);
        if (std::string refusal = source_refusal(solution_path, source, {}); !refusal.empty())
            return fail(to_string(RunStatus::Error), kExitFailed, refusal);
    }

    cache_.emplace(options_.cache_dir);
    fs::path reference_lib, candidate_lib;
    const bool need_reference = compares() || is_reference;
    if (need_reference) {
        CompileResult result = compile("reference", reference_source);
        if (result.interrupted || interrupt_signal())
            return fail(to_string(RunStatus::Interrupted), kExitInterrupted, "interrupted while compiling");
        if (!result.ok)
            return finish(std::string(to_string(RunStatus::CompileError)), kExitFailed,
                          "reference: " + result.message);
        reference_lib = result.library;
    }
    if (!is_reference) {
        CompileResult result = compile("candidate", solution_path);
        if (result.interrupted || interrupt_signal())
            return fail(to_string(RunStatus::Interrupted), kExitInterrupted, "interrupted while compiling");
        if (!result.ok)
            return finish(std::string(to_string(RunStatus::CompileError)), kExitFailed, result.message);
        candidate_lib = result.library;
        // The flags come from the candidate's own object, not the linked library, whose imports
        // include what the static CUDA runtime and cuBLAS bring (docs/engine.md "Flags").
        try {
            std::string object_error;
            const fs::path object = cache_->object(compile_request(solution_path), result, object_error);
            if (object.empty()) {
                err_ << "pkbw: no flags from the candidate's code: " << object_error << "\n";
            } else {
                const std::string own =
                    problem_ ? own_collective_symbol(*problem_, ProblemConfig{options_.nproc, options_.m, options_.n,
                                                                              dtype_, 0, options_.seed, InputMode::Pkb})
                             : std::string();
                candidate_flags_ = candidate_flags(undefined_object_symbols(object), object, own);
                for (const auto& flag : candidate_flags_)
                    if (flag.severity != "info")
                        candidate_warnings_.push_back(flag.text);
            }
        } catch (const Error& error) {
            err_ << "pkbw: cannot read the candidate's symbols: " << error.what() << "\n";
        }
    }

    fs::path config_path = run_dir_ / "config.json";
    std::ofstream(config_path) << rank_config(reference_lib, candidate_lib).dump(2) << "\n";
    recorder_.add_artifact(run_id_, {std::nullopt, std::nullopt, "config", config_path.string()});
    recorder_.archive(run_id_, {"config", config_path.string(), "", "", std::nullopt, std::nullopt});

    LaunchSpec spec;
    spec.program = options_.rank_program.empty() ? executable_dir() / "pkbw-rank" : options_.rank_program;
    spec.args = {"--config", config_path.string()};
    spec.world_size = options_.nproc;
    spec.run_dir = run_dir_;
    spec.cuda = backend_ == "cuda";
    spec.timeouts = options_.timeouts;
    spec.timeouts.fit_inputs(input_bytes_);
    if (backend_ == "host")
        spec.address_space_limit =
            options_.memory_limit_gib ? static_cast<std::uint64_t>(std::max(*options_.memory_limit_gib, 0.0) *
                                                                   static_cast<double>(1ull << 30))
                                      : default_host_address_space_limit(options_.nproc);
    const fs::path tracer = executable_dir().parent_path() / "lib" / "libpkbw_tracer.so";
    if (options_.trace_iterations > 0 && backend_ == "cuda") {
        if (fs::exists(tracer, ec)) {
            for (const auto& [name, value] :
                 tracer::tracing_environment(tracer.string(), (run_dir_ / "trace").string()))
                spec.extra_env[name] = value;
        } else if (!options_.json) {
            err_ << "pkbw: " << tracer.string() << " not found: tracing records engine ranges only\n";
        }
    }
    Observer observer(options_.json, out_, results_, hellos_, perf_, &trust_events_, start_progress());
    perf_.set_launch(0);
    LaunchOutcome outcome = launch_ranks(spec, observer);
    if (options_.perf || options_.mode == "perf")
        outcome = launch_more(spec, reference_lib, candidate_lib, observer, std::move(outcome));
    return conclude(outcome, is_reference);
}

// The symbol check misses a collective reached through dlsym or a library of its own; the trace
// shows what ran in the candidate's iterations whatever the route.
void Run::warn_about_nccl_in_trace(const std::vector<RankTrace>& traces) {
    std::vector<std::string> collectives;
    std::string ranks;
    for (const auto& use : nccl_kernels_in_side(traces, "candidate")) {
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(use.rank);
        for (const auto& collective : use.collectives)
            if (std::find(collectives.begin(), collectives.end(), collective) == collectives.end())
                collectives.push_back(collective);
    }
    if (collectives.empty())
        return;
    std::string names;
    for (const auto& collective : collectives)
        names += (names.empty() ? "" : ", ") + collective;
    candidate_warnings_.push_back("runs NCCL kernels (" + names + ") in its traced iterations on rank(s) " +
                                  ranks);
}

RunProgress* Run::start_progress() {
    if (!options_.progress)
        return nullptr;
    const bool timed = options_.perf || options_.mode == "perf";
    progress_.emplace(out_, err_, options_.json, options_.progress_terminal, options_.nproc,
                      options_.mode == "dryrun" ? 1 : options_.trials, timed ? options_.launches : 1,
                      compares());
    return &*progress_;
}

int Run::conclude(const LaunchOutcome& launch, bool is_reference) {
    if (progress_)
        progress_->close();
    if (options_.pkb_checkout)
        complete_pkb_results();
    const auto trace_warnings = store_traces();
    Verdict verdict = decide(launch, results_, options_.nproc,
                             options_.mode == "dryrun" ? 1 : options_.trials, options_.all_trials);
    for (const auto& warning : candidate_warnings_)
        add_warning(verdict, warning);
    for (const auto& warning : trace_warnings)
        add_warning(verdict, warning);
    apply_trust_findings(verdict, trust_events_);
    if (!launch.leftovers.empty()) {
        std::string text = "killed " + std::to_string(launch.leftovers.size()) +
                           " process(es) the ranks left after the run:";
        bool own_helper = false;
        for (std::size_t i = 0; i < launch.leftovers.size() && i < 8; ++i) {
            text += (i ? ", " : " ") + launch.leftovers[i];
            own_helper = own_helper || launch.leftovers[i].find("(pkbw-candidate)") != std::string::npos;
        }
        if (own_helper) // not the candidate's doing: pkbw's own process, orphaned when its rank was killed
            text +=
                " (pkbw-candidate is the process pkbw runs the candidate in; it outlived its killed rank)";
        add_warning(verdict, text);
    }
    record_results(launch, verdict);
    if (!perf_.empty()) {
        report_perf();
        for (const auto& warning : perf_warnings_)
            add_warning(verdict, warning);
    }
    if (options_.mode == "dryrun" && verdict.status == status::kPass)
        verdict.summary =
            "dryrun of the " + std::string(is_reference ? "reference" : "candidate") + " ran on " +
            std::to_string(options_.nproc) + " rank(s)" +
            verdict.summary.substr(std::min(verdict.summary.find("; warning"), verdict.summary.size()));
    if (!options_.json && launch.end != LaunchEnd::Completed)
        err_ << "pkbw: " << launch.message << "\n";
    return finish(verdict.status, verdict.exit_code, verdict.summary, &verdict);
}

} // namespace detail

bool gpu_present() {
    std::error_code ec;
    return fs::exists("/dev/nvidia0", ec) || fs::exists("/dev/nvidiactl", ec);
}

int execute_run(const RunOptions& options, Recorder& recorder, std::ostream& out, std::ostream& err) {
    Run run(options, recorder, out, err);
    try {
        return run.execute();
    } catch (const std::exception& error) {
        return run.abort_with(error.what());
    }
}

} // namespace pkbw::cli
