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
#include "pkbw/core/rank_config.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/run_layout.h"
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
#include "solution_names.h"
#include "suggest.h"
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
    start_.trials = status::trials_in_mode(options_.mode, options_.trials);
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
    remove_orphaned_shm_segments();          // of launchers killed outright (their ranks died with them)
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
    RankConfig config;
    config.run_id = run_id_;
    config.problem = stem_;
    config.mode = options_.mode;
    config.backend = backend_;
    config.world_size = options_.nproc;
    config.m = options_.m;
    config.n = options_.n;
    config.dtype = dtype_;
    config.trials = status::trials_in_mode(options_.mode, options_.trials);
    config.seed = options_.seed;
    config.input_mode = options_config().input_mode;
    config.atol = atol_;
    config.rtol = rtol_;
    config.all_trials = options_.all_trials;
    config.keep_outputs = options_.keep_outputs;
    config.keep_inputs = options_.keep_inputs;
    config.dryrun_side = start_.solution_is_reference ? "reference" : "candidate";
    config.output_dir = run_dir_.string();
    config.reference_library = reference_lib.string();
    config.candidate_library = candidate_lib.string();
    if (options_.trace_iterations > 0)
        config.extra["trace"] = {{"dir", run_layout::trace_dir(run_dir_).string()},
                                 {"iterations", options_.trace_iterations}};
    config.perf = options_.perf || options_.mode == status::kModePerf;
    if (config.perf) {
        config.perf_options = options_.perf_options.is_object() ? options_.perf_options : json::object();
        config.perf_options["launch_index"] = 0;
        config.perf_options["launch_seed"] = launch_seed(0);
        config.perf_options["reference_first"] = reference_first(0);
    }
    return to_json(config);
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
    const bool timed = options_.perf || options_.mode == status::kModePerf;
    progress_.emplace(out_, err_, options_.json, options_.progress_terminal, options_.nproc,
                      status::trials_in_mode(options_.mode, options_.trials), timed ? launch_count() : 1,
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
                             status::trials_in_mode(options_.mode, options_.trials), options_.all_trials);
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
        report_perf(verdict.status);
        for (const auto& warning : perf_warnings_)
            add_warning(verdict, warning);
    }
    if (options_.mode == status::kModeDryrun && verdict.status == status::kPass)
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
