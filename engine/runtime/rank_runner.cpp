#include "rank_runner.h"

#include "candidate_process.h"
#include "device.h"
#include "perf_runner.h"
#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/safetensors.h"
#include "pkbw/core/status.h"
#include "pkbw/core/trace.h"
#include "pkbw/engine_nvtx.h"
#include "pkbw/problems/registry.h"
#include "pkbw/tracer_control.h"
#include "recheck.h"
#include "remote_side.h"
#include "rendezvous.h"
#include "solution_library.h"
#include "trial_buffers.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace pkbw::engine {
namespace {

using nlohmann::json;

// The outcome of one side's call on this rank.
struct SideResult {
    OutputSet outputs;
    std::string error; // the solution returned non-zero: its ctx.fail() message
    std::vector<GuardViolation> guard_violations;
    std::vector<std::string> changed_inputs;
};

// A DeviceError after a solution call leaves the CUDA context unusable: report and leave.
[[noreturn]] void exit_after_device_error(EventSink& events, int rank, int trial, const std::string& phase,
                                          const DeviceError& error) {
    events.send({{"event", protocol::kError},
                 {"rank", rank},
                 {"trial", trial},
                 {"phase", phase},
                 {"kind", error.kind()},
                 {"message", error.what()}});
    ::_exit(kRankExitSolutionBroke);
}

// Input names in call order, comma-separated (safetensors readers may list tensors sorted by name).
std::string input_order(const std::vector<TensorSpec>& specs) {
    std::string order;
    for (const auto& spec : specs) {
        order += (order.empty() ? "" : ",") + spec.name;
    }
    return order;
}

// The tie rows of a rank's inputs file ("pkbw.tie_rows", docs/formats.md): {output: {rows, rule}}.
json tie_rows_json(const TieRowsByOutput& tie_rows) {
    json j = json::object();
    for (const auto& [name, ties] : tie_rows)
        j[name] = {{"rows", ties.rows}, {"rule", ties.rule}};
    return j;
}

std::string hostname() {
    char name[256] = {};
    ::gethostname(name, sizeof(name) - 1);
    return name;
}

std::string executable_directory() {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : self.parent_path().string();
}

class RankRun {
public:
    RankRun(const RankConfig& config, EventSink& events)
        : config_(config)
        , events_(events) {}

    int run() {
        // What the candidate process leaves behind is re-parented here, to be found and killed.
        ::prctl(PR_SET_CHILD_SUBREAPER, 1);
        const RendezvousConfig rdzv = rendezvous_config_from_env();
        rank_ = rdzv.rank;
        local_rank_ = rank_;
        if (const char* local = std::getenv("LOCAL_RANK"); local && *local) {
            local_rank_ = std::atoi(local);
        }
        if (rdzv.world_size != config_.world_size) {
            throw Error("WORLD_SIZE=" + std::to_string(rdzv.world_size) + " but the configuration says " +
                        std::to_string(config_.world_size));
        }
        const PerfOptions perf_options = parse_perf_options(config_.perf_options, "configuration");
        if (config_.mode != "calibrate") {
            problem_ = find_problem(config_.problem);
            if (problem_ == nullptr) {
                throw Error("unknown problem '" + config_.problem + "'");
            }
        }

        const auto trace = config_.extra.find("trace");
        if (trace != config_.extra.end() && trace->is_object()) {
            const std::filesystem::path dir = trace->value("dir", config_.output_dir + "/trace");
            std::filesystem::create_directories(dir);
            trace_dir_ = dir;
            recorder_ = std::make_unique<TraceRecorder>(
                dir / ("rank_" + std::to_string(rank_) + ".engine.jsonl"), rank_);
            trace_iterations_ = trace->value("iterations", 10);
        }
        phase("rendezvous", 0);
        try {
            rendezvous_ = Rendezvous::join(rdzv);
        } catch (const RendezvousError& error) {
            // The ranks could not meet (address, port, network): the environment, not pkbw (exit 3).
            events_.send({{"event", protocol::kError},
                          {"rank", rank_},
                          {"phase", "rendezvous"},
                          {"kind", "environment"},
                          {"message", error.what()}});
            std::cerr << "pkbw-rank " << rank_ << ": " << error.what() << "\n";
            return kRankExitEnvironment;
        }
        // Segment names carry the token's start so the launcher can clean up after a crash, and the
        // launcher's pid so a later pkbw can clean up after a launcher that was killed.
        shm_prefix_ = "/pkbw-" + rdzv.token.substr(0, 16);
        if (const char* launcher = std::getenv("PKBW_LAUNCHER_PID"); launcher && *launcher) {
            shm_prefix_ += "-p" + std::to_string(std::atoll(launcher));
        }
        // The candidate's process starts now and opens its device while this one opens its own.
        if (config_.mode != "calibrate" && config_.runs_candidate()) {
            start_candidate(problem_->params(config_.problem_config(0)));
        }
        try {
            if (config_.backend == "cuda") {
                device_ = make_cuda_device(local_rank_, *rendezvous_);
            } else {
                device_ = make_host_device(rank_, shm_prefix_);
            }
        } catch (const DeviceError& error) {
            events_.send({{"event", protocol::kError},
                          {"rank", rank_},
                          {"phase", "rendezvous"},
                          {"kind", error.kind() == "cuda_error" ? "environment" : error.kind()},
                          {"message", error.what()}});
            return kRankExitEnvironment;
        }
        send_hello();
        if (config_.mode == "calibrate") {
            phase("perf", 0);
            const auto sizes = config_.extra.value("calibrate_sizes",
                                                   std::vector<std::size_t>{1u << 20, 64u << 20, 256u << 20});
            const PerfContext context{*device_, *rendezvous_, events_, rank_, local_rank_, nullptr, {}};
            run_calibration(context, sizes, config_.extra.value("calibrate_iterations", 20));
            return finish(1);
        }

        if (config_.runs_reference()) {
            reference_.emplace(config_.reference_library, "reference");
        }
        const auto params = problem_->params(config_.problem_config(0));
        reference_session_ = std::make_unique<SolutionSession>("reference", *device_, *rendezvous_, params);
        shared_ = std::make_unique<SharedBuffers>(*device_);
        if (candidate_) {
            try {
                candidate_->wait_ready(*shared_);
            } catch (const CandidateFailure& failure) {
                if (failure.kind == "died") {
                    candidate_broke(failure, "rendezvous", 0);
                }
                throw Error(std::string("the candidate process could not start: ") + failure.what());
            }
            events_.send({{"event", protocol::kCandidate},
                          {"rank", rank_},
                          {"stage", "started"},
                          {"pid", static_cast<long long>(candidate_->pid())},
                          {"sandbox", candidate_->sandbox().describe()},
                          {"landlock_abi", candidate_->sandbox().landlock_abi()}});
        }

        const int trials = config_.mode == "dryrun" ? 1 : config_.trials;
        int trials_run = 0;
        bool all_passed = true;
        for (int trial = 0; trial < trials; ++trial) {
            ++trials_run;
            const bool everyone_passed = run_trial(trial);
            all_passed = all_passed && everyone_passed;
            if (!everyone_passed && !config_.all_trials) {
                break;
            }
        }
        // Timing is meaningful only for a solution that computes the right thing.
        if (recorder_ && trace_iterations_ > 0 && all_passed) {
            run_traced_pass(trace_iterations_);
        }
        if (config_.perf && all_passed) {
            phase("perf", 0);
            const PerfContext context{
                *device_, *rendezvous_, events_, rank_, local_rank_, problem_, config_.problem_config(0)};
            PerfSides sides;
            if (reference_) {
                sides.reference = [&](const TimingBuffers& buffers) {
                    return make_local_side(context, *reference_, *reference_session_, buffers);
                };
            }
            if (candidate_) {
                sides.candidate = [&](const TimingBuffers& buffers) -> std::unique_ptr<TimedSide> {
                    try {
                        return make_remote_side(*candidate_, *rendezvous_, buffers);
                    } catch (const CandidateFailure& failure) {
                        candidate_broke(failure, "perf", 0);
                    }
                };
                if (reference_) {
                    sides.after_timing = [&](TimingBuffers& timed) { recheck(timed); };
                }
            }
            try {
                run_perf(context, perf_options, sides, *shared_);
            } catch (const CandidateFailure& failure) {
                if (failure.kind == candidate_protocol::kFailSolution) {
                    throw Error("candidate failed while being timed: " + std::string(failure.what()));
                }
                candidate_broke(failure, "perf", 0);
            }
        }
        return finish(trials_run);
    }

private:
    int finish(int trials_run) {
        phase("teardown", std::max(trials_run - 1, 0));
        if (candidate_) {
            const int threads = candidate_->threads();
            candidate_->request_quit(); // it leaves while this process's sessions are torn down
            rendezvous_->barrier();
            reference_session_.reset();
            const auto leftovers = candidate_->finish();
            json left = json::array();
            for (const auto& process : leftovers) {
                left.push_back({{"pid", process.pid}, {"command", process.command.substr(0, 200)}});
            }
            events_.send({{"event", protocol::kCandidate},
                          {"rank", rank_},
                          {"stage", "finished"},
                          {"threads", threads},
                          {"leftovers", left}});
            candidate_.reset();
        } else {
            rendezvous_->barrier();
        }
        reference_session_.reset();
        shared_.reset();
        device_.reset();
        phase_range_.reset();
        tracer::flush_tracer();
        recorder_.reset();
        events_.send({{"event", protocol::kRankDone}, {"rank", rank_}, {"trials_run", trials_run}});
        return kRankExitOk;
    }

    std::filesystem::path trial_directory(int trial) const {
        const auto dir =
            std::filesystem::path(config_.output_dir) / "outputs" / ("trial_" + std::to_string(trial));
        std::filesystem::create_directories(dir);
        return dir;
    }

    void phase(const std::string& name, int trial) {
        events_.send({{"event", protocol::kPhase}, {"rank", rank_}, {"phase", name}, {"trial", trial}});
        // One open phase range at a time, in the host trace and in NVTX (domain "pkbw").
        phase_range_.reset();
        phase_range_ = std::make_unique<NvtxScopedRange>(recorder_.get(), "phase", name,
                                                         nlohmann::json{{"trial", trial}});
    }

    // The traced pass (--trace): separate from timing so that CUPTI's overhead never reaches a
    // timed iteration. Each iteration is a range with the same name on every rank, synchronised
    // inside, so the range ends when the GPU's work ends.
    void run_traced_pass(int iterations) {
        phase("trace", 0);
        const ProblemConfig problem_config = config_.problem_config(0);
        const auto input_specs = problem_->input_specs(problem_config, rank_);
        TrialBuffers buffers(*shared_, input_specs, problem_->build_inputs(problem_config, rank_),
                             problem_->output_specs(problem_config, rank_));
        buffers.prepare();
        tracer::set_tracing_enabled(true);
        if (reference_) {
            const Context context =
                reference_session_->make_context(local_rank_, buffers.input_views(), buffers.output_views());
            for (int i = 0; i < iterations; ++i) {
                rendezvous_->barrier();
                NvtxScopedRange range(recorder_.get(), "iteration", "reference/" + std::to_string(i),
                                      {{"iteration", i}, {"side", "reference"}});
                if (reference_->call(context) != 0) {
                    throw Error("reference failed in the traced pass: " + reference_session_->take_failure());
                }
                device_->synchronize();
            }
        }
        tracer::set_tracing_enabled(false);
        tracer::flush_tracer();
        // The candidate's iterations run in its own process, which traces itself into trace/candidate/.
        if (candidate_) {
            try {
                candidate_->trace(candidate_->define_views(buffers.input_views(), buffers.output_views()),
                                  iterations);
            } catch (const CandidateFailure& failure) {
                if (failure.kind == candidate_protocol::kFailSolution) {
                    throw Error("candidate failed in the traced pass: " + std::string(failure.what()));
                }
                candidate_broke(failure, "trace", 0);
            }
        }
    }

    // The candidates' own rendezvous (rank 0's judge picks its port and token and tells the other
    // judges), then this rank's candidate process in its sandbox.
    void start_candidate(const std::map<std::string, double>& params) {
        std::string mine;
        if (rank_ == 0) {
            mine = std::to_string(free_loopback_port()) + " " + random_hex_token();
        }
        const auto all = rendezvous_->all_gather(std::as_bytes(std::span(mine.data(), mine.size())));
        const std::string chosen(reinterpret_cast<const char*>(all[0].data()), all[0].size());
        CandidateLaunch launch;
        launch.program = executable_directory() + "/pkbw-candidate";
        launch.library = config_.candidate_library;
        launch.backend = config_.backend;
        launch.rank = rank_;
        launch.world_size = config_.world_size;
        launch.local_rank = local_rank_;
        launch.rendezvous_port = std::atoi(chosen.substr(0, chosen.find(' ')).c_str());
        launch.rendezvous_token = chosen.substr(chosen.find(' ') + 1);
        launch.shm_prefix = shm_prefix_ + "-c";
        launch.params = params;
        if (recorder_) {
            launch.trace_dir = (trace_dir_ / "candidate").string();
        }
        const char* sandbox = std::getenv("PKBW_SANDBOX");
        launch.sandbox = !(sandbox && std::string(sandbox) == "off");
        try {
            candidate_ = std::make_unique<CandidateProcess>(launch);
        } catch (const CandidateFailure& failure) {
            if (failure.kind == "died") {
                candidate_broke(failure, "rendezvous", 0);
            }
            throw Error(std::string("the candidate process could not start: ") + failure.what());
        }
    }

    // The candidate process failed in a way that ends this rank: say who, where and why, at once
    // (no peer waits for a deadline: the launcher sees this rank end and stops the others), then end
    // the way the candidate did, so the launcher's diagnosis reads as it does for a rank that died.
    [[noreturn]] void candidate_broke(const CandidateFailure& failure, const std::string& phase_name,
                                      int trial) {
        const bool died = failure.kind == "died";
        std::string message = failure.kind == candidate_protocol::kFailException
                                  ? "the candidate threw " + std::string(failure.what())
                                  : failure.what();
        const auto leftovers = kill_descendants(::getpid());
        if (!leftovers.empty()) {
            message += "; killed " + std::to_string(leftovers.size()) + " process(es) it left";
        }
        std::string kind = std::string(status::kKindSolutionError);
        if (failure.kind == candidate_protocol::kFailDevice) {
            kind = std::string(status::kKindCudaError);
        }
        events_.send({{"event", protocol::kError},
                      {"rank", rank_},
                      {"trial", trial},
                      {"phase", phase_name},
                      {"kind", kind},
                      {"message", message}});
        std::fflush(nullptr);
        if (died && failure.signal > 0) {
            std::signal(failure.signal, SIG_DFL);
            sigset_t set;
            sigemptyset(&set);
            sigaddset(&set, failure.signal);
            ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
            ::raise(failure.signal);
        }
        ::_exit(died && failure.exit_code == 0 ? 0 : kRankExitSolutionBroke);
    }

    void send_hello() {
        const DeviceVersions v = device_->versions();
        events_.send({{"event", protocol::kHello},
                      {"rank", rank_},
                      {"world_size", config_.world_size},
                      {"local_rank", local_rank_},
                      {"pid", static_cast<long long>(::getpid())},
                      {"host", hostname()},
                      {"backend", config_.backend},
                      {"device", v.device_name},
                      {"device_ordinal", device_->ordinal()},
                      {"driver", v.driver},
                      {"runtime", v.runtime},
                      {"nccl_runtime", v.nccl_runtime},
                      {"nccl_compiled", v.nccl_compiled},
                      {"l2_bytes", v.l2_bytes},
                      {"memory_bytes", v.memory_bytes}});
    }

    // The reference, called in this process.
    SideResult run_reference(TrialBuffers& buffers, int trial) {
        buffers.prepare();
        phase("reference", trial);
        SideResult result;
        const Context context =
            reference_session_->make_context(local_rank_, buffers.input_views(), buffers.output_views());
        int status = 0;
        try {
            status = reference_->call(context);
            device_->synchronize();
        } catch (const DeviceError& error) {
            exit_after_device_error(events_, rank_, trial, "reference", error);
        } catch (const std::bad_alloc&) {
            status = 1;
            result.error = out_of_memory_message();
        } catch (const std::exception& error) {
            status = 1;
            result.error = error.what();
        }
        if (status != 0 && result.error.empty()) {
            result.error = reference_session_->take_failure();
            if (result.error.empty()) {
                result.error = "reference returned " + std::to_string(status);
            }
        }
        collect(result, buffers, trial, "reference");
        return result;
    }

    // The candidate, called in its own process on this process's buffers.
    SideResult run_candidate(TrialBuffers& buffers, int trial, const std::map<std::string, double>& params) {
        buffers.prepare();
        phase("candidate", trial);
        SideResult result;
        try {
            candidate_->call(buffers.input_views(), buffers.output_views(), params);
        } catch (const CandidateFailure& failure) {
            if (failure.kind != candidate_protocol::kFailSolution) {
                candidate_broke(failure, "candidate", trial);
            }
            result.error = failure.what();
        }
        collect(result, buffers, trial, "candidate");
        return result;
    }

    void collect(SideResult& result, TrialBuffers& buffers, int trial, const std::string& side) {
        try {
            result.outputs = buffers.download_outputs();
            // The descriptor's fixed non-tensor leaves (None, torch.Size, ...): the same on both sides,
            // written with the tensors so that the output files and the cross-check see them.
            result.outputs.values = problem_->checked_output_values(config_.problem_config(trial), rank_);
            result.guard_violations = buffers.check_guards();
            if (side == "candidate" && !problem_->info().mutates_inputs) {
                result.changed_inputs = buffers.changed_inputs();
            }
        } catch (const DeviceError& error) {
            exit_after_device_error(events_, rank_, trial, side, error);
        }
    }

    // The re-check after timing (recheck.h): results as events; a broken candidate ends the rank.
    void recheck(TimingBuffers& timed) {
        phase(std::string(status::kPhaseRecheck), 0);
        const RecheckContext context{*problem_,
                                     config_,
                                     rank_,
                                     *shared_,
                                     *device_,
                                     *candidate_,
                                     [&](TrialBuffers& buffers, const std::map<std::string, double>& params) {
                                         reference_session_->set_params(params);
                                         SideResult reference = run_reference(buffers, 0);
                                         phase(std::string(status::kPhaseRecheck), 0);
                                         return std::make_pair(std::move(reference.outputs), reference.error);
                                     }};
        std::vector<RecheckResult> results;
        try {
            results = recheck_after_timing(context, timed);
        } catch (const CandidateFailure& failure) {
            candidate_broke(failure, std::string(status::kPhaseRecheck), 0);
        }
        for (const auto& result : results) {
            events_.send({{"event", protocol::kRecheck},
                          {"rank", rank_},
                          {"variant", result.variant},
                          {"status", result.status},
                          {"message", result.message}});
        }
    }

    // Returns whether every rank passed this trial.
    bool run_trial(int trial) {
        phase("inputs", trial);
        const ProblemConfig problem_config = config_.problem_config(trial);
        if (const auto why = problem_->check_config(problem_config)) {
            throw Error(config_.problem + ": " + *why);
        }
        const auto input_specs = problem_->input_specs(problem_config, rank_);
        const auto output_specs = problem_->output_specs(problem_config, rank_);
        std::vector<Tensor> host_inputs = problem_->build_inputs(problem_config, rank_);
        // The judge names the tie rows from the host inputs, before the candidate sees them (issue 16).
        const TieRowsByOutput tie_rows = problem_->checked_tie_rows(problem_config, rank_, host_inputs);
        if (config_.keep_inputs) {
            OutputSet inputs;
            for (std::size_t i = 0; i < input_specs.size(); ++i) {
                inputs.add(input_specs[i].name, host_inputs[i]);
            }
            std::map<std::string, std::string> metadata{{"pkbw.problem", config_.problem},
                                                        {"pkbw.trial", std::to_string(trial)},
                                                        {"pkbw.input_order", input_order(input_specs)},
                                                        {"pkbw.params", json(problem_->params(problem_config)).dump()}};
            if (!tie_rows.empty())
                metadata["pkbw.tie_rows"] = tie_rows_json(tie_rows).dump();
            write_safetensors(
                (trial_directory(trial) / ("rank_" + std::to_string(rank_) + "_inputs.safetensors")).string(),
                inputs, metadata);
        }
        TrialBuffers buffers(*shared_, input_specs, std::move(host_inputs), output_specs);
        const auto params = problem_->params(problem_config);
        reference_session_->set_params(params);

        // The candidate runs before the reference: when it runs, no result of this trial exists
        // anywhere in the process (the reference shares the address space, and on the host backend
        // its downloaded outputs would be plain heap memory a candidate could search for and copy).
        std::optional<SideResult> reference, candidate;
        if (candidate_) {
            candidate = run_candidate(buffers, trial, params);
        }
        if (reference_) {
            reference = run_reference(buffers, trial);
        }

        json result = {{"event", protocol::kRankResult}, {"rank", rank_}, {"trial", trial}};
        std::string status = "pass";
        std::string message;
        json tensors = json::array();
        json violations = json::array();
        json changed = json::array();
        auto note = [&](const std::string& new_status, const std::string& text) {
            // Keep the most severe status; messages accumulate.
            static const std::vector<std::string> order = {
                std::string(status::kPass), std::string(status::kMismatch),
                std::string(status::kInvalidOutput), std::string(status::kError)};
            const auto rank_of = [&](const std::string& s) {
                return std::find(order.begin(), order.end(), s) - order.begin();
            };
            if (rank_of(new_status) > rank_of(status)) {
                status = new_status;
            }
            message += (message.empty() ? "" : "; ") + text;
        };
        for (const auto* side : {&reference, &candidate}) {
            if (!*side) {
                continue;
            }
            const std::string name = side == &reference ? "reference" : "candidate";
            if (!(*side)->error.empty()) {
                note("error", name + " failed: " + (*side)->error);
            }
            for (const auto& v : (*side)->guard_violations) {
                note("invalid_output", name + " " + v.describe());
                violations.push_back(name + ": " + v.describe());
            }
            for (const auto& c : (*side)->changed_inputs) {
                note("invalid_output", name + " modified input " + c);
                changed.push_back(c);
            }
        }
        if (reference && candidate) {
            phase("compare", trial);
            const CompareOptions options{config_.atol, config_.rtol, 256};
            const OutputComparison comparison =
                compare_outputs(reference->outputs, candidate->outputs, options, tie_rows);
            for (const auto& tensor : comparison.tensors) {
                tensors.push_back(protocol::to_json(tensor));
            }
            if (!comparison.pass) {
                note("mismatch", comparison.first_error);
            }
        }

        // Every rank learns every verdict: the trial stops (or outputs are kept) for all alike.
        const std::uint8_t mine = status == "pass" ? 0 : 1;
        const auto verdicts = rendezvous_->all_gather(std::as_bytes(std::span(&mine, 1)));
        bool everyone_passed = true;
        for (const auto& v : verdicts) {
            everyone_passed = everyone_passed && !v.empty() && v[0] == std::byte{0};
        }

        json outputs = json::object();
        if (config_.keep_outputs || !everyone_passed) {
            const auto dir =
                std::filesystem::path(config_.output_dir) / "outputs" / ("trial_" + std::to_string(trial));
            std::filesystem::create_directories(dir);
            for (const auto* side : {&reference, &candidate}) {
                if (!*side) {
                    continue;
                }
                const std::string name = side == &reference ? "reference" : "candidate";
                const auto path = dir / ("rank_" + std::to_string(rank_) + "_" + name + ".safetensors");
                write_safetensors(path.string(), (*side)->outputs,
                                  {{"pkbw.problem", config_.problem},
                                   {"pkbw.side", name},
                                   {"pkbw.rank", std::to_string(rank_)},
                                   {"pkbw.trial", std::to_string(trial)}});
                outputs[name] = path.string();
            }
        }

        result["status"] = status;
        result["message"] = message;
        result["tensors"] = std::move(tensors);
        result["guard_violations"] = std::move(violations);
        result["mutated_inputs"] = std::move(changed);
        result["outputs"] = std::move(outputs);
        events_.send(result);
        return everyone_passed;
    }

    const RankConfig& config_;
    EventSink& events_;
    const Problem* problem_ = nullptr;
    int rank_ = 0;
    int local_rank_ = 0;
    std::unique_ptr<Rendezvous> rendezvous_;
    std::unique_ptr<Device> device_;
    std::optional<SolutionLibrary> reference_;
    std::unique_ptr<SolutionSession> reference_session_;
    std::unique_ptr<SharedBuffers> shared_;       // inputs and outputs, mapped into the candidate process
    std::unique_ptr<CandidateProcess> candidate_; // null when this run has no candidate side
    std::string shm_prefix_;
    std::filesystem::path trace_dir_;
    std::unique_ptr<TraceRecorder> recorder_; // null unless tracing
    std::unique_ptr<NvtxScopedRange> phase_range_;
    int trace_iterations_ = 0;
};

} // namespace

int run_rank(const RankConfig& config, EventSink& events) {
    RankRun run(config, events);
    return run.run();
}

} // namespace pkbw::engine
