// The state of one `pkbw` run once it has a row in the store, shared by run.cpp (resolve, launch,
// verdict, record), run_compile.cpp (compile, source checks) and run_perf.cpp (perf report,
// calibration). Private to the CLI.
#pragma once

#include "compile_cache.h"
#include "elf_symbols.h"
#include "fd.h"
#include "launcher.h"
#include "locate.h"
#include "perf_report.h"
#include "pkbw/core/problem.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/store.h"
#include "recorder.h"
#include "run.h"
#include "run_progress.h"
#include "run_report.h"
#include "signals.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <string_view>

namespace pkbw::cli::detail {

namespace fs = std::filesystem;
using nlohmann::json;

std::string host_name();
std::string run_dir_name(const std::string& stem);

class Observer;
struct PkbPlan; // run_pkb.cpp

class Run {
public:
    Run(const RunOptions& options, Recorder& recorder, std::ostream& out, std::ostream& err)
        : options_(options)
        , recorder_(recorder)
        , out_(out)
        , err_(err) {}

    int execute();
    // An unexpected exception still ends the run in the store.
    int abort_with(const std::string& message) {
        return fail(to_string(RunStatus::Error), kExitFailed, "internal error: " + message);
    }

private:
    void emit(const json& body) {
        if (options_.json)
            out_ << protocol::to_line(body) << std::flush;
    }
    // Ends the run: store row, last output; returns the exit code.
    int finish(const std::string& status, int exit_code, const std::string& summary,
               const Verdict* verdict = nullptr);
    int fail(std::string_view status, int exit_code, const std::string& message) {
        if (!options_.json)
            err_ << "pkbw: " << message << "\n";
        return finish(std::string(status), exit_code, message);
    }
    void begin(const Problem* problem, const std::string& solution_path, bool is_reference) {
        begin(problem->info().id, problem->info().stem, solution_path, is_reference);
    }
    void begin(int problem_id, const std::string& stem, const std::string& solution_path, bool is_reference);
    // Why the solution at `solution_path`, whose text is `source`, may not run here (NVLink multicast
    // while the environment disables it), or "".
    std::string source_refusal(const std::string& solution_path, const std::string& source,
                               const std::map<std::string, std::string>& rank_environment) const;
    // run_pkb.cpp: PKB's Python solutions (--pkb-checkout), execute_pkb's steps in order: the problem,
    // the solution and the checks of the options; the data, the rank script, the interpreter and the
    // solution's own source; the header, the ranks' config, the launch.
    int execute_pkb();
    std::optional<int> resolve_pkb(PkbPlan& plan);
    std::optional<int> prepare_pkb(PkbPlan& plan);
    void print_pkb_header(const PkbPlan& plan);
    fs::path write_pkb_config(const PkbPlan& plan);
    LaunchSpec pkb_launch_spec(const PkbPlan& plan, const fs::path& config_path) const;
    void complete_pkb_results();
    CompileResult compile(const std::string& side, const fs::path& source);
    // run_execute.cpp: execute's steps, in the order execute takes them.
    // The mode, world size, trials, dtype and inputs asked for; a usage exit code when one is wrong.
    std::optional<int> check_options();
    void choose_backend();
    // Without --dtype, the precision a generation folder's name gives (PKB's naming:
    // solutions_<backend>_<precision>_...), else PKB's default, bf16; dtype_origin_ says which.
    void dtype_from_solution_folder(const std::string& solution_path);
    // Where the dtype came from, for the run header: "--dtype", "the folder's name", "PKB's default;
    // --dtype f32 for a float32 candidate".
    std::string dtype_origin_text() const;
    // The solution's file and, when it cannot run, why (a usage error, recorded once the run begins).
    std::pair<std::string, std::string> locate_solution();
    // The problem's refusal of this size, the GPU the cuda backend needs, the reference's file.
    // The problem configuration the options ask for (trial 0, the options' seed and input mode).
    ProblemConfig options_config() const;
    std::optional<int> check_problem_config(const Problem& problem, const fs::path& reference_source);
    void print_run_header(const Problem& problem, const std::string& solution_path);
    // A candidate that may not run here (the NCCL device API, multicast) or at all (safety.h).
    std::optional<int> refuse_source(const std::string& solution_path);
    void read_candidate_flags(const std::string& solution_path, const CompileResult& result);
    int launch(const fs::path& reference_lib, const fs::path& candidate_lib, bool is_reference);
    LaunchSpec launch_spec(const fs::path& config_path);
    json rank_config(const fs::path& reference_lib, const fs::path& candidate_lib) const;
    // Traces, verdict, records and perf once the ranks have ended.
    int conclude(const LaunchOutcome& launch, bool is_reference);
    void warn_about_nccl_in_trace(const std::vector<RankTrace>& traces);
    // Reads the run's trace directory into the store; returns a warning per file left out (at most a
    // few, then a count), each also printed on stderr.
    std::vector<std::string> store_traces();
    void record_results(const LaunchOutcome& launch, const Verdict& verdict);
    void report_perf(const std::string& status);
    void record_speedup_summaries(const PerfFigures& figures);
    json calibration_results();
    // The machine's measured busbw for `collective` (`pkbw calibrate` at this world size), 0 when none.
    double calibrated_busbw(CollectiveKind collective);
    // The rates the plausibility floor of this run's perf figures uses (none on the host backend).
    MachinePeaks machine_peaks(const PerfFigures& figures) const;
    int calibrate();
    // run_check.cpp: `pkbw check`, a candidate compiled and its flags read without a run or a record.
    int check();
    int check_pkb();
    void print_check(const std::string& solution_path, const std::string& build);
    int check_finished(const std::string& status, int exit_code, const std::string& message,
                       const std::string& solution_path, const nlohmann::json& diagnostics);
    bool compares() const { return options_.mode == status::kModeEval || options_.mode == status::kModePerf; }
    // `pkbw perf --solution reference`: the reference timed against itself (A/A), whose interval is
    // the problem's noise floor (noise_floors.json beside the runs).
    bool aa_ = false;
    // Launch `index`'s seed (buffer offsets, which side first): random per run, never 0.
    std::uint64_t launch_seed(int index) const;
    bool reference_first(int index) const;
    // Drawn once per run, odd so that no launch's seed is 0 ("no placement").
    const std::uint64_t launch_seed_base_ = [] {
        std::random_device device;
        return (static_cast<std::uint64_t>(device()) << 32 | device()) | 1;
    }();
    // The verdict's band for this run: --min-effect and the A/A floor recorded for this problem and size.
    VerdictRule verdict_rule() const;
    std::string noise_floor_key() const;
    void record_noise_floor(const PerfFigures& figures);
    // The launches a perf run plans, and how many it extends to when the verdict after them is
    // ambiguous (RunOptions::max_launches); extended_from_ says after how many it extended (0: not).
    int launch_count() const;
    int extended_launch_count(int launches);
    int extended_from_ = 0;
    // Launches 1.. of a perf run (launch 0 is the run's own launch): timing only.
    LaunchOutcome launch_more(const LaunchSpec& first, const fs::path& reference_lib,
                              const fs::path& candidate_lib, Observer& observer, LaunchOutcome outcome);

    const RunOptions& options_;
    Recorder& recorder_;
    std::ostream& out_;
    std::ostream& err_;
    std::int64_t run_id_ = 0;
    bool begun_ = false;
    RunStart start_;
    fs::path run_dir_;
    std::string backend_;
    std::string stem_;
    DType dtype_ = DType::BF16;
    std::string dtype_origin_ = "default"; // "--dtype", "folder" or "default"
    double atol_ = kPkbTolerance, rtol_ = kPkbTolerance;
    std::optional<CompileCache> cache_;
    std::optional<DataLayout> layout_;
    std::map<std::pair<int, int>, json> results_;
    std::map<int, json> hellos_;
    PerfCollector perf_;
    json perf_json_;
    // Set by report_perf: the perf figures' warnings (a candidate below the plausibility floor), for
    // the run's warnings.
    std::vector<std::string> perf_warnings_;
    const Problem* problem_ = nullptr;
    std::uint64_t input_bytes_ = 0; // the most any rank draws (the inputs phase's deadline grows with it)
    std::vector<Flag>
        candidate_flags_; // from the candidate's own object (elf_symbols.h); report_perf adds info
    CompileRequest compile_request(const fs::path& source) const;
    nlohmann::json flags_json() const;
    // What the store's run_flags keep: the code flags with their severity, then the verdict's other
    // warnings as "warning".
    std::vector<FlagRecord> flag_records(const Verdict* verdict) const;
    nlohmann::json info_json() const;
    std::vector<std::string> candidate_warnings_; // NCCL collectives imported (before launch) or traced
    std::vector<json> trust_events_; // candidate, timing_plan, timed_check, pkbw perf_result (trust_report.h)
    // Progress lines and events while the ranks run (RunOptions::progress); null when off.
    std::optional<RunProgress> progress_;
    RunProgress* start_progress();
};

class Observer : public LaunchObserver {
public:
    Observer(bool json_mode, std::ostream& out, std::map<std::pair<int, int>, json>& results,
             std::map<int, json>& hellos, PerfCollector& perf, std::vector<json>* trust_events = nullptr,
             RunProgress* progress = nullptr)
        : json_(json_mode)
        , out_(out)
        , results_(results)
        , hellos_(hellos)
        , perf_(perf)
        , trust_events_(trust_events)
        , progress_(progress) {}
    void on_event(int rank, const protocol::Message& message) override {
        if (json_)
            out_ << protocol::to_line(message.body) << std::flush;
        if (progress_)
            progress_->on_event(rank, message);
        if (message.event == protocol::kRankResult)
            results_[{message.body.value("trial", 0), rank}] = message.body;
        else if (message.event == protocol::kHello)
            hellos_[rank] = message.body;
        else if (message.event == protocol::kPerfResult)
            perf_.add(rank, message.body);
        else if (message.event == protocol::kTimingPlan)
            perf_.add_plan(rank, message.body);
        if (trust_events_ &&
            (message.event == protocol::kCandidate || message.event == protocol::kTimingPlan ||
             message.event == protocol::kTimedCheck ||
             (message.event == protocol::kPerfResult && (message.body.value("protocol", "") == "pkbw" ||
                                                         message.body.value("protocol", "") == "graph"))))
            trust_events_->push_back(message.body);
    }
    void on_wait() override {
        if (progress_)
            progress_->on_wait();
    }
    void on_log(int rank, std::string_view stream, std::string_view line) override {
        if (json_)
            out_ << protocol::to_line(
                {{"event", protocol::kLog}, {"rank", rank}, {"stream", stream}, {"text", line}});
    }
    void on_rank_exit(const RankReport& report) override {
        if (!json_)
            return;
        json body = {{"event", protocol::kRankExit}, {"rank", report.rank}, {"phase", report.phase}};
        body["exit_code"] = report.signal == 0 ? json(report.exit_code) : json(nullptr);
        body["signal"] = report.signal == 0 ? json(nullptr) : json(signal_name(report.signal));
        out_ << protocol::to_line(body) << std::flush;
    }

private:
    bool json_;
    std::ostream& out_;
    std::map<std::pair<int, int>, json>& results_;
    std::map<int, json>& hellos_;
    PerfCollector& perf_;
    std::vector<json>* trust_events_;
    RunProgress* progress_;
};

} // namespace pkbw::cli::detail
