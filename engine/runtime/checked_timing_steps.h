// The checked timing's steps (checked_timing.h runs them): one object per launch and rank holding both
// sides' workers, slots and the plan. Split over checked_timing.cpp (the plan, the blocks, the run),
// checked_timing_checks.cpp (every timed call checked against the reference's) and
// checked_timing_graph.cpp (the graph figure's series). Private to engine/runtime.
#pragma once

#include "checked_timing.h"
#include "pkbw/core/perf_stats.h"
#include "pkbw/core/protocol.h"
#include "timed_lengths.h"
#include "timing_slots.h"

#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

namespace pkbw::engine {

namespace checked_timing_steps {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point start, Clock::time_point end) {
    return std::chrono::duration<double, std::milli>(end - start).count();
}

class CheckedTiming {
public:
    CheckedTiming(const CheckedTimingContext& context, const PerfOptions& options)
        : c_(context)
        , p_(context.perf)
        , options_(options)
        , inputs_layout_(p_.problem->input_specs(p_.config, p_.rank))
        , outputs_layout_(p_.problem->output_specs(p_.config, p_.rank)) {}

    void run();

private:
    struct Side {
        TimedWorker* worker = nullptr;
        // One set of length slots per call; null when no output is variable-length.
        std::unique_ptr<TimedLengths> lengths;
        std::vector<int> views; // one view set per call
        // The graph figure's views of its own slots (passes x calls), where it replays passes.
        std::vector<int> graph_views;
        // Frozen from the round trip's calibration to the end of the blocks. Last: destroyed (thawed)
        // before the slots' release asks the worker to unmap them.
        std::unique_ptr<WorkerStillness> still;
    };

    void plan();
    void prepare_side(Side& side);
    double calibrate_round_trip();
    // One request of `side`'s worker on the judge's clock: judges' barrier, clock, thaw, request, judges'
    // barrier (every rank's worker has answered: rank 0's serves its group's barriers), clock, freeze.
    // `graph`: the block replayed from the worker's CUDA graph of it (captured first: capture_graphs).
    BlockTiming timed_request(Side& side, const std::vector<int>& views,
                              const std::map<std::string, double>& params, double& judge_ms,
                              bool graph = false);
    void warm_up(Side& side, bool graph = false);
    // Block `block` of the run's order; a graph block reads the graph figure's groups (after the launched
    // blocks' own) and is numbered after them.
    void time_block(int block, BlockSide which, bool graph = false);
    // The graph figure (docs/perf.md "The graph figure"): each side's calls captured once, agreed over
    // the judges, then warmed and timed in ABBA pairs of their own; each pair checked as the launched ones.
    void run_graph_series(const std::array<Side*, 2>& warm_order);
    // Captures both sides' graphs; "" when every rank's both sides could, else why not (every rank
    // returns the same: a rank whose graph failed must not leave the others at a barrier).
    std::string capture_graphs();
    // The reference's device time per call in one replay of its graph on the warm-up's inputs (its
    // trusted worker's span): what the graph's passes are planned from.
    double reference_graph_call_ms();
    // The passes every rank can replay (the fewest any rank plans: plan_graph_passes).
    GraphPasses agree_graph_passes(double call_ms);
    // The graph figure's own slots for `passes` passes, and each side's views of them (defined with the
    // side's process running, frozen again after).
    void add_graph_slots(int passes);
    // The slots the block being timed reads and writes: the graph figure's own where it replays
    // passes, else the launched blocks'.
    bool graph_slots() const { return in_graph_ && graph_inputs_ != nullptr; }
    int slot_calls() const {
        return graph_slots() ? graph_passes_ * plan_.calls_per_block : plan_.calls_per_block;
    }
    void* inputs_base() const { return graph_slots() ? graph_inputs_->data() : input_slots_->data(); }
    // The output slots both sides write, and the judge's copy of the pair's first block's outputs.
    void* live_outputs() const { return graph_slots() ? graph_outputs_->data() : output_slots_->data(); }
    void* kept_outputs() const { return graph_slots() ? graph_kept_->data() : kept_->data(); }
    // Where `side`'s outputs of the pair being checked are.
    const void* pair_outputs(const Side& side) const {
        return &side == first_of_pair_ ? kept_outputs() : live_outputs();
    }
    // After the pair's first block: its outputs into the judge's own memory, before the second block
    // poisons the slots and writes them.
    void keep_first_outputs(const Side& side);
    const std::vector<int>& views_of(const Side& side) const {
        return graph_slots() ? side.graph_views : side.views;
    }
    // "call k of N", with the pass where the graph replays passes.
    std::string call_name(int call) const;
    int warm_group() const { return plan_.groups(); }
    // Whether a block's thaw waits until the worker's tree is seen running (the default) or only asks
    // (PKBW_THAW_WAIT=0, a diagnostic: how much of the judge's time per block the wait adds; the
    // request that follows waits on the tree either way, so the clock covers the thaw alike).
    // Read once: the environment is not consulted inside a block's clock.
    const bool thaw_confirmed_ = [] {
        const char* asked = std::getenv("PKBW_THAW_WAIT");
        return asked == nullptr || std::string_view(asked) != "0";
    }();
    void load_group(int group, Side& side);
    // Scans the output slots the block just timed wrote (Device::scan_slots).
    SlotScan scan_outputs();
    void check_pair(int group, int candidate_block);
    // core's comparison of one call's slots: its first error ("" when it passes) and how many of the
    // candidate's elements still hold the poison (the call never wrote them).
    struct CallFailure {
        std::string message;
        std::int64_t unwritten = 0;
    };
    CallFailure explain(int group, int call);
    void send_plan();
    // The seed of this launch's placement (spacer and offsets); 0, no spacer and no offsets, where
    // PKBW_PLACEMENT=fixed asks every launch to take its buffers as the allocator gives them (a
    // diagnostic: how much of a pair's run-to-run spread placement explains; docs/perf.md).
    std::uint64_t placement_seed() const {
        const char* asked = std::getenv("PKBW_PLACEMENT");
        return asked != nullptr && std::string_view(asked) == "fixed" ? 0 : options_.launch_seed;
    }
    // Which side this launch times first (the launcher alternates it over launches).
    bool reference_first() const { return options_.reference_first; }
    // What runs before every block of either side and before every round trip of the calibration, the
    // same each time so that no side's clock starts from a different state (docs/perf.md): the
    // scheduling guard, the candidate's settled CPU reading, the GPU probe, the device's telemetry.
    // Fills `found` with the guard's findings and the telemetry; returns the candidate's CPU so far.
    double prepare_block(json& found);
    // Gives the reference's worker and this judge back the judge's scheduling (scheduling_guard.h);
    // what it found is added to `found`.
    void guard_scheduling(json& found);
    // Pins both workers' main threads where the placement says (cpu_placement.h) and records the
    // placement, and any pin that failed, in the plan.
    void place_workers(const ScopedPin& judge);

    const CheckedTimingContext& c_;
    const PerfContext& p_;
    const PerfOptions& options_;
    SlotLayout inputs_layout_, outputs_layout_;
    CheckedTimingPlan plan_;
    InputMode mode_ = InputMode::Pkb;
    bool cold_ = true;        // the judge writes 3x L2 after loading a block's inputs
    std::string inputs_note_; // a limit of the check (a warning)
    std::string inputs_info_; // what the inputs are (the report says it)
    TimingInputs* inputs_ = nullptr;
    std::unique_ptr<Spacer> spacer_; // before the slots: this launch's placement
    std::unique_ptr<SharedSlots> input_slots_;
    std::unique_ptr<SharedSlots> graph_inputs_; // the graph figure's passes x calls input slots
    // One set of output slots that both sides write, each block poisoning them first: whatever their
    // pages do to a kernel's time they do to both sides alike (separate slots per side let an A/A pair's
    // launch read 0.93-1.08 on the H200 with steady blocks). The pair's first block's outputs are kept
    // in the judge's own memory before the second block; a candidate never runs while the slots hold
    // the reference's outputs, and never sees the copy.
    std::unique_ptr<SharedSlots> output_slots_, graph_outputs_;
    std::unique_ptr<DeviceMemory> kept_, graph_kept_;
    const Side* first_of_pair_ = nullptr;
    bool in_graph_ = false; // the graph figure's series has begun
    int graph_passes_ = 1;
    std::string graph_passes_reason_; // plan_graph_passes's, for the report
    Side reference_, candidate_;
    double round_trip_ms_ = 0;     // the calibration's median: the judge's per-call figure
    double round_trip_max_ms_ = 0; // its largest: the judge's floor under a side's own time
    double idle_probe_us_ = 0;
    double probe_before_us_ = 0;       // of the block being timed
    int untouched_at_reply_ = 0;       // of the last candidate block
    bool changed_after_reply_ = false; // of the last candidate block: its slots changed after it answered
    double scan_ms_ = 0;    // of the last candidate block: the scan at its reply, not counted in its time
    double thaw_ms_ = 0;    // of the last block: the judge's thaw of its worker, inside its time
    double request_ms_ = 0; // of the last block: the request sent to its answer read, on the judge's clock
    json plan_scheduling_ = json::object(); // guard_scheduling before the calibration
    int judge_cpu_ = -1, worker_cpu_ = -1;  // pinned by place_workers (the guard's baselines)
};

} // namespace checked_timing_steps
} // namespace pkbw::engine
