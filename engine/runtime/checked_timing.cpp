#include "candidate_process.h"
#include "checked_timing_steps.h"
#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/error.h"
#include "pkbw/core/perf_stats.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/random.h"
#include "pkbw/core/timing_checks.h"
#include "rendezvous.h"
#include "timed_lengths.h"
#include "timing_inputs.h"
#include "timing_slots.h"
#include "trial_buffers.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <unistd.h>

namespace pkbw::engine {
namespace {

constexpr double kProbeSpinUs = 20;   // the probe kernel's own length
constexpr int kRoundTripSamples = 25; // empty blocks on the trusted worker

} // namespace

int checked_timing_blocks(const PerfOptions& options, int sides) {
    return sides == 1 ? options.pairs : sides == 2 ? 2 * options.pairs : 0;
}

namespace checked_timing_steps {

namespace cp = candidate_protocol;

void CheckedTiming::plan() {
    // Planned, agreed and drawn while the eval's trials ran (timing_inputs.h); into device memory now.
    inputs_ = c_.inputs;
    inputs_->upload(p_.device);
    const TimingAgreement& agreed = inputs_->agreement();
    plan_ = agreed.plan;
    cold_ = agreed.cold;
    mode_ = agreed.mode;
    inputs_note_ = agreed.note;
    inputs_info_ = agreed.info;
    if (inputs_->set_bytes() != inputs_layout_.set_bytes) {
        throw Error("timed inputs of " + std::to_string(inputs_->set_bytes()) + " bytes a set for slots of " +
                    std::to_string(inputs_layout_.set_bytes));
    }
    spacer_ = std::make_unique<Spacer>(p_.device, spacer_bytes(p_.device, placement_seed(), p_.rank));
    input_slots_ = std::make_unique<SharedSlots>(
        c_.shared, inputs_layout_.set_bytes * static_cast<std::size_t>(plan_.calls_per_block),
        launch_pad(placement_seed(), p_.rank, 0));
    const std::size_t outputs = outputs_layout_.set_bytes * static_cast<std::size_t>(plan_.calls_per_block);
    output_slots_ =
        std::make_unique<SharedSlots>(c_.shared, outputs, launch_pad(placement_seed(), p_.rank, 1));
    kept_ = std::make_unique<DeviceMemory>(p_.device, outputs);
}

void CheckedTiming::prepare_side(Side& side) {
    side.lengths = TimedLengths::make(c_.shared, outputs_layout_.specs, plan_.calls_per_block);
    for (int k = 0; k < plan_.calls_per_block; ++k) {
        side.views.push_back(side.worker->process->define_views(
            inputs_layout_.views(input_slots_->data(), k), outputs_layout_.views(output_slots_->data(), k),
            side.lengths ? side.lengths->slot(k) : nullptr));
    }
}

void CheckedTiming::keep_first_outputs(const Side& side) {
    p_.device.copy_async(kept_outputs(), live_outputs(),
                         outputs_layout_.set_bytes * static_cast<std::size_t>(slot_calls()));
    p_.device.synchronize();
    first_of_pair_ = &side;
}

double CheckedTiming::calibrate_round_trip() {
    if (!reference_.worker) {
        return 0; // no trusted worker: nothing is subtracted (the plan says so)
    }
    // The same path as a block's (timed_request): the same preparation before it, the thaw, the round
    // trip, the barriers.
    std::vector<double> samples;
    for (int i = 0; i < kRoundTripSamples; ++i) {
        json ignored;
        prepare_block(ignored);
        double judge_ms = 0;
        timed_request(reference_, {}, {}, judge_ms);
        samples.push_back(judge_ms);
    }
    round_trip_max_ms_ = *std::max_element(samples.begin(), samples.end());
    return percentile(samples, 50);
}

void CheckedTiming::load_group(int group, Side& side) {
    // Inputs come back to their drawn values before every block (a side may change them in place),
    // and the side's outputs are poisoned, so an element no call wrote cannot pass.
    // The graph's later passes read copies of the block's sets, at addresses of their own.
    const std::size_t pass_bytes = inputs_layout_.set_bytes * static_cast<std::size_t>(plan_.calls_per_block);
    auto* inputs = static_cast<std::byte*>(inputs_base());
    inputs_->load(group * plan_.calls_per_block, plan_.calls_per_block, inputs);
    for (int pass = 1; pass < slot_calls() / plan_.calls_per_block; ++pass) {
        p_.device.copy_async(inputs + pass_bytes * static_cast<std::size_t>(pass), inputs, pass_bytes);
    }
    p_.device.fill(live_outputs(), kPoisonByte,
                   outputs_layout_.set_bytes * static_cast<std::size_t>(slot_calls()));
    if (side.lengths) {
        side.lengths->reset(p_.device);
    }
    if (cold_) {
        p_.device.flush_cache(); // what was just written must not be in L2 when the calls read it
    }
    p_.device.synchronize();
}

BlockTiming CheckedTiming::timed_request(Side& side, const std::vector<int>& views,
                                         const std::map<std::string, double>& params, double& judge_ms,
                                         bool graph) {
    p_.rendezvous.barrier();
    const auto start = Clock::now();
    side.still->thaw(thaw_confirmed_);
    const auto requested = Clock::now();
    thaw_ms_ = ms_between(start, requested);
    BlockTiming timing;
    if (graph) {
        std::string why;
        auto replayed = side.worker->process->graph_calls(views, params, true, why);
        if (!replayed) { // captured before; only a process that changed its answer gets here
            throw CandidateFailure(std::string(cp::kFailProtocol),
                                   side.worker->side +
                                       "'s process could not replay the graph it captured: " + why);
        }
        timing = *replayed;
    } else {
        timing = side.worker->process->timed_calls(views, params, true);
    }
    request_ms_ = ms_between(requested, Clock::now());
    const bool checking = side.worker->untrusted && !views.empty();
    std::uint64_t at_reply = 0;
    if (checking) {
        // At once, before anything gives its queued work time to drain: a block answered before its
        // calls had written their outputs leaves slots untouched, and one whose outputs change after
        // this scan was still working (compared once frozen, below). The scan's own time is the
        // judge's: taken out of the block's (work still running gains at most that).
        const auto replied = Clock::now();
        const SlotScan scan = scan_outputs();
        untouched_at_reply_ =
            static_cast<int>(std::count(scan.untouched.begin(), scan.untouched.end(), true));
        at_reply = scan.fingerprint;
        scan_ms_ = ms_between(replied, Clock::now());
    }
    // The block ends when every rank's worker has answered: a rank's work left after its answer is
    // inside the time, and rank 0's worker, which serves its group's barriers, is done before a freeze.
    p_.rendezvous.barrier();
    judge_ms = ms_between(start, Clock::now()) - (checking ? scan_ms_ : 0.0);
    side.still->freeze();
    if (checking) {
        changed_after_reply_ = scan_outputs().fingerprint != at_reply;
    }
    return timing;
}

SlotScan CheckedTiming::scan_outputs() {
    return p_.device.scan_slots(live_outputs(), outputs_layout_.set_bytes, slot_calls(), kPoisonByte);
}

void CheckedTiming::warm_up(Side& side, bool graph) {
    if (options_.warmup <= 0) {
        return;
    }
    load_group(warm_group(), side); // the warm-up's own inputs: never timed, never shown again
    const auto params = p_.problem->params(inputs_->config(warm_group() * plan_.calls_per_block));
    const int blocks = (options_.warmup + slot_calls() - 1) / slot_calls();
    for (int b = 0; b < blocks; ++b) {
        double ignored = 0;
        timed_request(side, views_of(side), params, ignored, graph);
    }
}

double CheckedTiming::prepare_block(json& found) {
    guard_scheduling(found);
    const double cpu = candidate_.worker != nullptr ? candidate_.still->settled_cpu_ms() : 0;
    probe_before_us_ = p_.device.on_host() ? 0 : p_.device.probe_us(kProbeSpinUs);
    const Device::Telemetry t = p_.device.telemetry();
    if (t.known) {
        found["sm_mhz"] = t.sm_mhz;
        found["temperature_c"] = t.temperature_c;
        found["clock_reasons"] = t.reasons;
        found["throttled"] = t.throttled();
    }
    return cpu;
}

void CheckedTiming::time_block(int block, BlockSide which, bool graph) {
    Side& side = which == BlockSide::Reference ? reference_ : candidate_;
    const int group = block / 2; // the graph figure's blocks are numbered after the launched ones
    load_group(group, side);
    json found = json::object();
    const double cpu_before = prepare_block(found);
    const bool probing = !p_.device.on_host();
    const bool watching = which == BlockSide::Reference && candidate_.worker != nullptr;
    const double probe_before = probe_before_us_;
    const auto params = p_.problem->params(inputs_->config(group * plan_.calls_per_block));

    double judge_ms = 0;
    const BlockTiming timing = timed_request(side, views_of(side), params, judge_ms, graph);
    // The candidate is frozen again here: a kernel of its still running now holds the GPU.
    const double probe_after = probing ? p_.device.probe_us(kProbeSpinUs) : 0;
    const Device::Telemetry after = p_.device.telemetry();
    if (after.known && after.throttled()) {
        found["throttled"] = true;
        found["clock_reasons_after"] = after.reasons;
    }
    // The block's time per call: the worker's own device time of the block (its span, gaps between
    // calls included), steady where the judge's clock carries the round trip's jitter. The launcher
    // holds the candidate's to the judge's clock: never below its block's judge time less the largest
    // overhead the reference's blocks had (docs/perf.md "The time").
    const double device_call_ms = timing.calls > 0 ? timing.span_ms / timing.calls : 0;
    json event = {{"event", protocol::kPerfResult},
                  {"rank", p_.rank},
                  {"protocol", graph ? "graph" : "pkbw"},
                  {"side", side.worker->side},
                  {"block", block},
                  {"samples_ms", {device_call_ms}},
                  {"judge_call_ms", judge_call_ms(judge_ms, round_trip_ms_, timing.calls)},
                  {"call_samples_ms", timing.samples_ms},
                  {"span_ms", timing.span_ms},
                  {"enqueue_ms", timing.enqueue_ms},
                  {"calls", timing.calls},
                  {"judge_ms", judge_ms},
                  {"thaw_ms", thaw_ms_},
                  // Where the judge's time beyond the span lies (diagnostics, docs/perf.md "Replication,
                  // measured"): the request's round trip on the judge's clock, the worker's own time of
                  // it and of its calls to the device-wide synchronisation (the worker's numbers).
                  {"request_ms", request_ms_},
                  {"worker_ms", timing.worker_ms},
                  {"host_ms", timing.host_ms},
                  {"round_trip_ms", round_trip_ms_},
                  {"round_trip_max_ms", round_trip_max_ms_}};
    if (graph) {
        // Passes over the block's calls_per_block input sets, each on copies of its own.
        event["passes"] = graph_slots() ? graph_passes_ : 1;
        event["passes_reason"] = graph_passes_reason_;
    }
    if (probing) {
        event["probe_before_us"] = probe_before;
        event["probe_after_us"] = probe_after;
        event["idle_probe_us"] = idle_probe_us_;
    }
    if (side.worker->untrusted) {
        event["untouched_at_reply"] = untouched_at_reply_;
        event["changed_after_reply"] = changed_after_reply_;
        event["scan_ms"] = scan_ms_;
    }
    event.update(found);
    if (watching) {
        event["frozen_cpu_ms"] = std::max(candidate_.still->tree_cpu_ms() - cpu_before, 0.0);
        event["frozen"] = !candidate_.still->failed();
    }
    p_.events.send(event);
    if (reference_.worker && candidate_.worker && block % 2 == 0) {
        keep_first_outputs(side); // the pair's first block (blocks of either figure are numbered in pairs)
    }
    if (c_.block_timed) {
        c_.block_timed(side.worker->side);
    }
}

void CheckedTiming::guard_scheduling(json& found) {
    if (c_.scheduling == nullptr || reference_.worker == nullptr) {
        return;
    }
    const std::pair<pid_t, const char*> processes[] = {
        {reference_.worker->process->pid(), "the reference's timing worker: "}, {::getpid(), "the judge: "}};
    const int pinned[] = {worker_cpu_, judge_cpu_};
    for (std::size_t i = 0; i < std::size(processes); ++i) {
        const auto& [pid, who] = processes[i];
        const SchedulingRestore restore = restore_scheduling(pid, *c_.scheduling, pinned[i]);
        if (restore.suspicious > 0) {
            found["rescheduled_threads"] = found.value("rescheduled_threads", 0) + restore.suspicious;
            if (!found.contains("rescheduled")) {
                found["rescheduled"] = who + restore.first;
            }
        }
        if (restore.failed > 0 && !found.contains("reschedule_failed")) {
            found["reschedule_failed"] = who + restore.failure;
        }
    }
}

void CheckedTiming::place_workers(const ScopedPin& judge) {
    if (c_.placement == nullptr) {
        return;
    }
    plan_scheduling_["placement"] = c_.placement->description;
    judge_cpu_ = judge.failure().empty() ? c_.placement->judge_cpu : -1;
    // The reference's worker first: the scheduling guard holds its main thread to this pin, so where
    // the pin fails it is held to the judge's affinity instead.
    std::string failure = judge.failure();
    for (Side* side : {&reference_, &candidate_}) {
        if (!side->worker || c_.placement->worker_cpu < 0) {
            continue;
        }
        const std::string why = pin_thread(side->worker->process->pid(), c_.placement->worker_cpu);
        if (side == &reference_) {
            worker_cpu_ = why.empty() ? c_.placement->worker_cpu : -1;
        }
        if (failure.empty()) {
            failure = why;
        }
    }
    if (!failure.empty()) {
        plan_scheduling_["placement_failure"] = failure;
    }
}

void CheckedTiming::send_plan() {
    json event = {{"event", protocol::kTimingPlan},
                  {"rank", p_.rank},
                  {"calls_per_block", plan_.calls_per_block},
                  {"pairs", plan_.pairs},
                  {"cold_inputs", cold_},
                  {"reason", plan_.reason},
                  {"input_mode", std::string(input_mode_name(mode_))},
                  {"inputs_note", inputs_note_},
                  {"inputs_info", inputs_info_},
                  {"round_trip_ms", round_trip_ms_},
                  {"round_trip_max_ms", round_trip_max_ms_},
                  {"launch_index", options_.launch_index},
                  {"spacer_bytes", spacer_bytes(p_.device, placement_seed(), p_.rank)},
                  {"reference_first", reference_first()},
                  {"round_trip_trusted", reference_.worker != nullptr},
                  {"checked", reference_.worker != nullptr && candidate_.worker != nullptr}};
    if (!p_.device.on_host()) {
        event["idle_probe_us"] = idle_probe_us_;
        event["probe_spin_us"] = kProbeSpinUs;
    }
    if (candidate_.worker) {
        event["containment"] = candidate_.worker->process->container().describe();
    }
    // What the fresh sets cost before the first block (docs/perf.md): the drawing, and the part of it the
    // blocks waited for.
    event["sets"] = inputs_->sets();
    event["draw_seconds"] = inputs_->draw_seconds();
    event["draw_wait_seconds"] = inputs_->wait_seconds();
    event.update(plan_scheduling_);
    p_.events.send(event);
}

void CheckedTiming::run() {
    reference_.worker = c_.reference;
    candidate_.worker = c_.candidate;
    plan();
    for (Side* side : {&reference_, &candidate_}) {
        if (side->worker) {
            prepare_side(*side);
        }
    }
    // Each worker frozen from here to the end of the blocks, but in its own blocks; the slots' release
    // (unmapping, a request) comes after, with the processes running. Not before every judge is here:
    // rank 0's worker serves its group's rendezvous, and its server thread may still be answering a
    // peer's last barrier (of PKB's series, or of the workers' set-up in a later launch) after its own
    // worker has replied. Frozen then, it left that peer's worker and judge waiting and this judge at its
    // next barrier (on a loaded host the tie test hung in perf, or ended in "rank 1 timed out in phase
    // start (still running: rank 0 in perf)").
    p_.rendezvous.barrier();
    for (Side* side : {&reference_, &candidate_}) {
        side->still = std::make_unique<WorkerStillness>(side->worker);
    }
    const ScopedPin judge_pinned(c_.placement ? c_.placement->judge_cpu : -1);
    place_workers(judge_pinned);
    guard_scheduling(plan_scheduling_);
    round_trip_ms_ = calibrate_round_trip();
    if (!p_.device.on_host()) {
        std::vector<double> probes;
        for (int i = 0; i < 5; ++i) {
            probes.push_back(p_.device.probe_us(kProbeSpinUs));
        }
        idle_probe_us_ = *std::min_element(probes.begin(), probes.end());
    }
    send_plan();
    const bool reference_first_ = reference_first();
    const std::array<Side*, 2> warm_order = reference_first_ ? std::array<Side*, 2>{&reference_, &candidate_}
                                                             : std::array<Side*, 2>{&candidate_, &reference_};
    for (Side* side : warm_order) {
        if (side->worker) {
            warm_up(*side);
        }
    }
    const auto order = block_order(plan_.pairs, reference_first_);
    const bool both = reference_.worker && candidate_.worker;
    for (std::size_t b = 0; b < order.size(); ++b) {
        const BlockSide which =
            both ? order[b] : (reference_.worker ? BlockSide::Reference : BlockSide::Candidate);
        if (!both && b % 2 == 1) {
            continue; // one side: one block per pair
        }
        time_block(static_cast<int>(b), which);
        if (both && b % 2 == 1) {
            const int candidate_block =
                order[b] == BlockSide::Candidate ? static_cast<int>(b) : static_cast<int>(b - 1);
            check_pair(static_cast<int>(b / 2), candidate_block);
        }
    }
    if (both) {
        run_graph_series(warm_order);
    }
}

} // namespace checked_timing_steps

void run_checked_timing(const CheckedTimingContext& context, const PerfOptions& options) {
    checked_timing_steps::CheckedTiming timing(context, options);
    timing.run();
}

} // namespace pkbw::engine
