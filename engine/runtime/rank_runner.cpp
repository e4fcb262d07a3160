#include "candidate_process.h"
#include "checked_timing.h"
#include "device.h"
#include "perf_runner.h"
#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/rank_environment.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/safetensors.h"
#include "pkbw/core/status.h"
#include "pkbw/core/trace.h"
#include "pkbw/engine_nvtx.h"
#include "pkbw/problems/registry.h"
#include "pkbw/tracer_control.h"
#include "rank_run.h"
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
#include <set>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace pkbw::engine {
namespace {

using nlohmann::json;

std::string hostname() {
    char name[256] = {};
    ::gethostname(name, sizeof(name) - 1);
    return name;
}

// At most 32 processes, for an event: a fork bomb's count is in leftover_count.
json process_list(const std::vector<ProcessInfo>& processes) {
    json list = json::array();
    for (std::size_t i = 0; i < processes.size() && i < 32; ++i) {
        list.push_back({{"pid", processes[i].pid}, {"command", processes[i].command.substr(0, 200)}});
    }
    return list;
}

std::string executable_directory() {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : self.parent_path().string();
}

} // namespace

namespace detail {

int RankRun::run() {
    // What the candidate process leaves behind is re-parented here, to be found and killed.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    const RendezvousConfig rdzv = rendezvous_config_from_env();
    read_identity(rdzv);
    const PerfOptions perf_options = parse_perf_options(config_.perf_options, "configuration");
    open_trace();
    phase(status::kPhaseRendezvous, 0);
    try {
        rendezvous_ = Rendezvous::join(rdzv);
    } catch (const RendezvousError& error) {
        // The ranks could not meet (address, port, network): the environment, not pkbw (exit 3).
        events_.send({{"event", protocol::kError},
                      {"rank", rank_},
                      {"phase", status::kPhaseRendezvous},
                      {"kind", status::kKindEnvironment},
                      {"message", error.what()}});
        std::cerr << "pkbw-rank " << rank_ << ": " << error.what() << "\n";
        return kRankExitEnvironment;
    }
    name_segments();
    const bool calibrating = config_.mode == status::kModeCalibrate;
    if (!calibrating)
        start_workers(perf_options);
    if (!open_device())
        return kRankExitEnvironment;
    send_hello();
    if (calibrating) {
        phase(status::kPhasePerf, 0);
        const auto sizes =
            config_.extra.value("calibrate_sizes", std::vector<std::size_t>{1u << 20, 64u << 20, 256u << 20});
        const PerfContext context{*device_, *rendezvous_, events_, rank_, local_rank_, nullptr, {}};
        run_calibration(context, sizes, config_.extra.value("calibrate_iterations", 20));
        return finish(1);
    }
    open_sessions();
    return finish(run_trials());
}

void RankRun::read_identity(const RendezvousConfig& rdzv) {
    rank_ = rdzv.rank;
    local_rank_ = rank_;
    if (const char* local = std::getenv("LOCAL_RANK"); local && *local) {
        local_rank_ = std::atoi(local);
    }
    if (rdzv.world_size != config_.world_size) {
        throw Error("WORLD_SIZE=" + std::to_string(rdzv.world_size) + " but the configuration says " +
                    std::to_string(config_.world_size));
    }
    if (config_.mode != status::kModeCalibrate) {
        problem_ = find_problem(config_.problem);
        if (problem_ == nullptr) {
            throw Error("unknown problem '" + config_.problem + "'");
        }
    }
}

void RankRun::open_trace() {
    const auto trace = config_.extra.find("trace");
    if (trace == config_.extra.end() || !trace->is_object())
        return;
    const std::filesystem::path dir = trace->value("dir", run_layout::trace_dir(config_.output_dir).string());
    std::filesystem::create_directories(dir);
    trace_dir_ = dir;
    recorder_ = std::make_unique<TraceRecorder>(run_layout::engine_trace(dir, rank_), rank_);
    trace_iterations_ = trace->value("iterations", 10);
}

void RankRun::name_segments() {
    // Segment names carry the token's start so the launcher can clean up after a crash, and the
    // launcher's pid so a later pkbw can clean up after a launcher that was killed.
    // PKBW_SEGMENT_TAG is the launcher's, independent of the token (the workers' segment names carry
    // it too); ranks started by another launcher take a random one.
    const char* tag = std::getenv(rank_environment::kEnvSegmentTag.data());
    shm_prefix_ =
        "/pkbw-" + (tag && *tag ? std::string(tag).substr(0, 16) : random_hex_token().substr(0, 16));
    if (const char* launcher = std::getenv(rank_environment::kEnvLauncherPid.data()); launcher && *launcher) {
        shm_prefix_ += "-p" + std::to_string(std::atoll(launcher));
    }
}

void RankRun::start_workers(const PerfOptions& perf_options) {
    if (config_.perf) {
        // pkbw's timed blocks are agreed now, and their inputs drawn while the devices and the workers
        // start and the trials run.
        const std::size_t memory = config_.backend == "cuda" ? cuda_device_memory_bytes(local_rank_) : 0;
        timing_inputs_ = start_timing_inputs(*rendezvous_, *problem_, config_.problem_config(0), rank_,
                                             perf_options, memory, config_.backend == "cuda");
        // The workers start now and open their devices while this process opens its own. Before them,
        // the scheduling that the reference's worker will be held to (scheduling_guard.h).
        scheduling_ = current_thread_scheduling();
        const char* local_world = std::getenv("LOCAL_WORLD_SIZE");
        placement_ =
            cpu_placement_for_rank(config_.backend == "cuda", local_rank_,
                                   local_world && *local_world ? std::atoi(local_world) : config_.world_size);
    }
    const auto params = problem_->params(config_.problem_config(0));
    if (config_.runs_candidate()) {
        candidate_ = start_worker("candidate", config_.candidate_library, params);
    }
    if (config_.perf && config_.runs_reference()) {
        reference_worker_ = start_worker("reference", config_.reference_library, params);
        if (candidate_) {
            // Without cgroups a tree is what lies below this process: each worker's is its own.
            candidate_->exclude_from_tree(reference_worker_->pid());
            reference_worker_->exclude_from_tree(candidate_->pid());
        }
    }
}

bool RankRun::open_device() {
    try {
        if (config_.backend == "cuda") {
            device_ = make_cuda_device(local_rank_, *rendezvous_);
        } else {
            device_ = make_host_device(rank_, shm_prefix_);
        }
        return true;
    } catch (const DeviceError& error) {
        events_.send(
            {{"event", protocol::kError},
             {"rank", rank_},
             {"phase", status::kPhaseRendezvous},
             {"kind", error.kind() == status::kKindCudaError ? status::kKindEnvironment : error.kind()},
             {"message", error.what()}});
        return false;
    }
}

void RankRun::open_sessions() {
    if (config_.runs_reference()) {
        reference_.emplace(config_.reference_library, "reference");
    }
    const auto params = problem_->params(config_.problem_config(0));
    reference_session_ = std::make_unique<SolutionSession>("reference", *device_, *rendezvous_, params);
    shared_ = std::make_unique<SharedBuffers>(*device_);
    if (reference_worker_) {
        try {
            reference_worker_->wait_ready(*shared_);
        } catch (const CandidateFailure& failure) {
            throw Error(std::string("the reference's timing worker could not start: ") + failure.what());
        }
    }
    if (!candidate_)
        return;
    try {
        candidate_->wait_ready(*shared_);
    } catch (const CandidateFailure& failure) {
        if (failure.kind == "died") {
            candidate_broke(failure, status::kPhaseRendezvous, 0);
        }
        throw Error(std::string("the candidate process could not start: ") + failure.what());
    }
    events_.send({{"event", protocol::kCandidate},
                  {"rank", rank_},
                  {"stage", "started"},
                  {"pid", static_cast<long long>(candidate_->pid())},
                  {"sandbox", candidate_->sandbox().describe()},
                  {"landlock_abi", candidate_->sandbox().landlock_abi()},
                  {"containment", candidate_->container().describe()}});
}

int RankRun::run_trials() {
    const int trials = status::trials_in_mode(config_.mode, config_.trials);
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
        run_perf_phase();
    }
    return trials_run;
}

void RankRun::run_perf_phase() {
    phase(status::kPhasePerf, 0);
    const PerfContext context{
        *device_, *rendezvous_, events_, rank_, local_rank_, problem_, config_.problem_config(0)};
    TimedWorker reference{"reference", reference_worker_.get(), false};
    TimedWorker candidate{"candidate", candidate_.get(), true};
    PerfWorkers workers;
    workers.reference = reference_worker_ ? &reference : nullptr;
    workers.candidate = candidate_ ? &candidate : nullptr;
    workers.atol = config_.atol;
    workers.rtol = config_.rtol;
    workers.inputs = timing_inputs_.get();
    workers.scheduling = scheduling_ ? &*scheduling_ : nullptr;
    workers.placement = &placement_;
    try {
        run_perf(context, parse_perf_options(config_.perf_options, "configuration"), workers, *shared_);
        timing_inputs_.reset(); // the staging's device memory
    } catch (const CandidateFailure& failure) {
        if (failure.side != "candidate") {
            throw Error("the reference's timing worker failed: " + std::string(failure.what()));
        }
        if (failure.kind == candidate_protocol::kFailSolution) {
            throw Error("candidate failed while being timed: " + std::string(failure.what()));
        }
        candidate_broke(failure, status::kPhasePerf, 0);
    }
}

int RankRun::finish(int trials_run) {
    phase(status::kPhaseTeardown, std::max(trials_run - 1, 0));
    if (reference_worker_) {
        reference_worker_->request_quit();
        reference_worker_->finish();
        reference_worker_.reset();
    }
    if (candidate_) {
        const int threads = candidate_->threads();
        candidate_->request_quit(); // it leaves while this process's sessions are torn down
        rendezvous_->barrier();
        reference_session_.reset();
        const CandidateLeftovers leftovers = candidate_->finish();
        events_.send({{"event", protocol::kCandidate},
                      {"rank", rank_},
                      {"stage", "finished"},
                      {"threads", threads},
                      {"containment", candidate_->container().describe()},
                      {"leftovers", process_list(leftovers.killed)},
                      {"leftover_count", leftovers.count},
                      {"killed_groups", leftovers.groups},
                      {"escaped", process_list(leftovers.survivors)}});
        candidate_.reset();
    } else {
        rendezvous_->barrier();
    }
    reference_session_.reset();
    timing_inputs_.reset(); // before the device its staging lives on
    shared_.reset();
    device_.reset();
    phase_range_.reset();
    tracer::flush_tracer();
    recorder_.reset();
    events_.send({{"event", protocol::kRankDone}, {"rank", rank_}, {"trials_run", trials_run}});
    return kRankExitOk;
}

std::filesystem::path RankRun::trial_directory(int trial) const {
    const auto dir = run_layout::trial_dir(config_.output_dir, trial);
    std::filesystem::create_directories(dir);
    return dir;
}

void RankRun::phase(std::string_view name, int trial) {
    events_.send({{"event", protocol::kPhase}, {"rank", rank_}, {"phase", name}, {"trial", trial}});
    // One open phase range at a time, in the host trace and in NVTX (domain "pkbw").
    phase_range_.reset();
    phase_range_ =
        std::make_unique<NvtxScopedRange>(recorder_.get(), "phase", name, nlohmann::json{{"trial", trial}});
}

void RankRun::run_traced_pass(int iterations) {
    phase(status::kPhaseTrace, 0);
    const ProblemConfig problem_config = config_.problem_config(0);
    const auto input_specs = problem_->input_specs(problem_config, rank_);
    TrialBuffers buffers(*shared_, input_specs, problem_->build_inputs(problem_config, rank_),
                         problem_->output_specs(problem_config, rank_));
    buffers.prepare();
    tracer::set_tracing_enabled(true);
    if (reference_) {
        const Context context = reference_session_->make_context(
            local_rank_, buffers.input_views(), buffers.output_views(), buffers.output_lengths());
        // One call before the iterations keeps one-time costs out of iteration 0: on the H200 the
        // first traced iteration of 12_allgather_gemm took 5.3 ms against 50 us for the rest, after
        // the same kernels had run in every trial (so, the tracer's own set-up, most likely).
        {
            NvtxScopedRange range(recorder_.get(), "warmup", "reference/warmup", {{"side", "reference"}});
            if (reference_->call(context) != 0) {
                throw Error("reference failed in the traced pass: " + reference_session_->take_failure());
            }
            device_->synchronize();
        }
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
            candidate_->trace(candidate_->define_views(buffers.input_views(), buffers.output_views(),
                                                       buffers.output_lengths()),
                              iterations);
        } catch (const CandidateFailure& failure) {
            if (failure.kind == candidate_protocol::kFailSolution) {
                throw Error("candidate failed in the traced pass: " + std::string(failure.what()));
            }
            candidate_broke(failure, status::kPhaseTrace, 0);
        }
    }
}

std::unique_ptr<CandidateProcess> RankRun::start_worker(const std::string& side, const std::string& library,
                                                        const std::map<std::string, double>& params) {
    std::string mine;
    std::optional<LoopbackListener> listener; // rank 0's: the worker adopts it; ours closes below
    if (rank_ == 0) {
        listener.emplace(LoopbackListener::open(config_.world_size + 8));
        mine = std::to_string(listener->port()) + " " + random_hex_token();
    }
    const auto all = rendezvous_->all_gather(std::as_bytes(std::span(mine.data(), mine.size())));
    const std::string chosen(reinterpret_cast<const char*>(all[0].data()), all[0].size());
    CandidateLaunch launch;
    launch.side = side;
    launch.program = executable_directory() + "/pkbw-candidate";
    launch.library = library;
    launch.backend = config_.backend;
    launch.rank = rank_;
    launch.world_size = config_.world_size;
    launch.local_rank = local_rank_;
    launch.rendezvous_port = std::atoi(chosen.substr(0, chosen.find(' ')).c_str());
    launch.rendezvous_token = chosen.substr(chosen.find(' ') + 1);
    launch.rendezvous_listen_fd = listener ? listener->fd() : -1;
    launch.shm_prefix = shm_prefix_ + (side == "candidate" ? "-c" : "-w");
    launch.params = params;
    if (recorder_ && side == "candidate") {
        launch.trace_dir = (trace_dir_ / run_layout::kCandidateTraceDir).string();
    }
    const char* sandbox = std::getenv(rank_environment::kEnvSandbox.data());
    launch.sandbox = !(sandbox && std::string(sandbox) == "off");
    launch.spin = placement_.spin;
    try {
        return std::make_unique<CandidateProcess>(launch);
    } catch (const CandidateFailure& failure) {
        if (side == "candidate" && failure.kind == "died") {
            candidate_broke(failure, status::kPhaseRendezvous, 0);
        }
        throw Error("the " + side + (side == "candidate" ? " process" : "'s timing worker") +
                    " could not start: " + failure.what());
    }
}

void RankRun::candidate_broke(const CandidateFailure& failure, std::string_view phase_name, int trial) {
    const bool died = failure.kind == "died";
    std::string message = failure.kind == candidate_protocol::kFailException
                              ? "the candidate threw " + std::string(failure.what())
                              : failure.what();
    // The candidate's tree, then anything else below the judge (the candidate process may be gone already,
    // or its start may have failed: the judge is the subreaper of what it left).
    int left = candidate_ ? candidate_->kill_tree().count : 0;
    // The reference's timing worker is not the candidate's: it ends with this process (death signal).
    std::set<pid_t> workers;
    if (reference_worker_) {
        workers.insert(reference_worker_->pid());
    }
    left += static_cast<int>(kill_descendants(::getpid(), nullptr, workers).size());
    if (left > 0) {
        message += "; killed " + std::to_string(left) + " process(es) it left";
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
    // Neither the raise nor the _exit below runs a destructor: the workers' directories go now (their
    // processes were killed above).
    for (const CandidateProcess* worker : {candidate_.get(), reference_worker_.get()}) {
        if (worker != nullptr) {
            std::error_code ec;
            std::filesystem::remove_all(worker->sandbox_dir(), ec);
        }
    }
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

void RankRun::send_hello() {
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

} // namespace detail

int run_rank(const RankConfig& config, EventSink& events) {
    detail::RankRun run(config, events);
    return run.run();
}

} // namespace pkbw::engine
