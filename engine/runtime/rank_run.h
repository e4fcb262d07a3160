// The judge of one rank (rank_runner.h's run_rank) as a class, private to the engine: rank_runner.cpp
// holds its life (rendezvous, device, the candidate's process, the traced pass, perf, teardown) and
// rank_trial.cpp one trial (inputs, candidate, reference, compare, outputs).
#pragma once

#include "candidate_process.h"
#include "cpu_placement.h"
#include "device.h"
#include "perf_runner.h"
#include "pkbw/core/outputs.h"
#include "pkbw/core/problem.h"
#include "pkbw/core/status.h"
#include "pkbw/core/tie_rows.h"
#include "pkbw/core/trace.h"
#include "pkbw/engine_nvtx.h"
#include "rank_runner.h"
#include "rendezvous.h"
#include "scheduling_guard.h"
#include "solution_library.h"
#include "timing_inputs.h"
#include "trial_buffers.h"

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::engine::detail {

// The outcome of one side's call on this rank.
struct SideResult {
    OutputSet outputs;
    std::string error; // the solution returned non-zero: its ctx.fail() message
    std::vector<GuardViolation> guard_violations;
    std::vector<std::string> changed_inputs;
};

// A trial's verdict on this rank, as its rank_result says it.
struct TrialVerdict {
    std::string status{status::kPass};
    std::string message;
    nlohmann::json tensors = nlohmann::json::array();
    nlohmann::json violations = nlohmann::json::array();
    nlohmann::json changed = nlohmann::json::array(); // inputs the candidate modified
    // Keeps the most severe status (pass < mismatch < invalid_output < error); messages accumulate.
    void note(std::string_view new_status, const std::string& text);
};

class RankRun {
public:
    RankRun(const RankConfig& config, EventSink& events)
        : config_(config)
        , events_(events) {}
    // The rank's whole life; returns its exit code (rank_runner.h).
    int run();

private:
    // run's steps, in order: who this rank is (and its problem); the trace's recorder; the segments'
    // names; the workers (candidate, reference's timing worker) and perf's inputs; the device; the
    // reference and the workers ready; the trials, the traced pass and perf (returns the trials run).
    void read_identity(const RendezvousConfig& rdzv);
    void open_trace();
    void name_segments();
    void start_workers(const PerfOptions& perf_options);
    bool open_device(); // false: the error event is sent, the rank ends (environment)
    void open_sessions();
    int run_trials();
    int finish(int trials_run);
    std::filesystem::path trial_directory(int trial) const;
    void phase(std::string_view name, int trial);

    // The traced pass (--trace): separate from timing so that CUPTI's overhead never reaches a
    // timed iteration. Each iteration is a range with the same name on every rank, synchronised
    // inside, so the range ends when the GPU's work ends.
    void run_traced_pass(int iterations);

    // A worker group's own rendezvous (rank 0's judge picks its port and token and tells the other
    // judges), then this rank's worker process in its sandbox: the candidate's process, or the
    // reference's timing worker (perf: both sides are timed the same way, docs/perf.md).
    std::unique_ptr<CandidateProcess> start_worker(const std::string& side, const std::string& library,
                                                   const std::map<std::string, double>& params);
    // The perf phase: the reference's timing worker, then both sides timed.
    void run_perf_phase();

    // The candidate process failed in a way that ends this rank: say who, where and why, at once
    // (no peer waits for a deadline: the launcher sees this rank end and stops the others), then end
    // the way the candidate did, so the launcher's diagnosis reads as it does for a rank that died.
    [[noreturn]] void candidate_broke(const CandidateFailure& failure, std::string_view phase_name,
                                      int trial);
    void send_hello();

    // The reference, called in this process.
    SideResult run_reference(TrialBuffers& buffers, int trial);

    // The candidate, called in its own process on this process's buffers.
    SideResult run_candidate(TrialBuffers& buffers, int trial, const std::map<std::string, double>& params);
    void collect(SideResult& result, TrialBuffers& buffers, int trial, const std::string& side);

    // Returns whether every rank passed this trial.
    bool run_trial(int trial);
    // run_trial's steps: the inputs kept (--keep-inputs), the verdict of both sides' results, the
    // outputs kept (--keep-outputs, or a trial some rank failed); returns {side: file}.
    void keep_trial_inputs(int trial, const std::vector<TensorSpec>& input_specs,
                           const std::vector<Tensor>& host_inputs, const TieRowsByOutput& tie_rows);
    TrialVerdict judge_trial(const std::optional<SideResult>& reference,
                             const std::optional<SideResult>& candidate, int trial,
                             const TieRowsByOutput& tie_rows);
    nlohmann::json keep_trial_outputs(int trial, const std::optional<SideResult>& reference,
                                      const std::optional<SideResult>& candidate);

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
    std::unique_ptr<CandidateProcess> reference_worker_; // perf only: the reference's timing worker
    std::unique_ptr<TimingInputs> timing_inputs_;        // perf only: drawn while the trials run
    CpuPlacement placement_;                             // perf only: where the judge and workers run
    std::optional<ThreadScheduling> scheduling_;         // perf only: this judge's, before any worker
    std::string shm_prefix_;
    std::filesystem::path trace_dir_;
    std::unique_ptr<TraceRecorder> recorder_; // null unless tracing
    std::unique_ptr<NvtxScopedRange> phase_range_;
    int trace_iterations_ = 0;
};

} // namespace pkbw::engine::detail
