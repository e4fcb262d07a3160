#include "checked_timing.h"
#include "candidate_process.h"
#include "timing_slots.h"

#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"
#include "pkbw/core/perf_stats.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/random.h"
#include "pkbw/core/timing_checks.h"
#include "rendezvous.h"
#include "timed_lengths.h"
#include "timing_inputs.h"
#include "trial_buffers.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <memory>
#include <unistd.h>

namespace pkbw::engine {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kProbeSpinUs = 20;   // the probe kernel's own length
constexpr int kRoundTripSamples = 25; // empty blocks on the trusted worker

double ms_between(Clock::time_point start, Clock::time_point end) {
    return std::chrono::duration<double, std::milli>(end - start).count();
}

} // namespace

int checked_timing_blocks(const PerfOptions& options, int sides) {
    return sides == 1 ? options.pairs : sides == 2 ? 2 * options.pairs : 0;
}

namespace cp = candidate_protocol;

namespace {

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
        std::unique_ptr<SharedSlots> outputs;
        // One set of length slots per call; null when no output is variable-length.
        std::unique_ptr<TimedLengths> lengths;
        std::vector<int> views; // one view set per call
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
                              const std::map<std::string, double>& params, double& judge_ms, bool graph = false);
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
    // Scans `side`'s output slots (Device::scan_slots).
    SlotScan scan_outputs(const Side& side);
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
    Side reference_, candidate_;
    double round_trip_ms_ = 0;     // the calibration's median: the judge's per-call figure
    double round_trip_max_ms_ = 0; // its largest: the judge's floor under a side's own time
    double idle_probe_us_ = 0;
    double probe_before_us_ = 0;   // of the block being timed
    int untouched_at_reply_ = 0;       // of the last candidate block
    bool changed_after_reply_ = false; // of the last candidate block: its slots changed after it answered
    double scan_ms_ = 0; // of the last candidate block: the scan at its reply, not counted in its time
    double thaw_ms_ = 0; // of the last block: the judge's thaw of its worker, inside its time
    double request_ms_ = 0; // of the last block: the request sent to its answer read, on the judge's clock
    json plan_scheduling_ = json::object(); // guard_scheduling before the calibration
};

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
}

void CheckedTiming::prepare_side(Side& side) {
    side.outputs = std::make_unique<SharedSlots>(
        c_.shared, outputs_layout_.set_bytes * static_cast<std::size_t>(plan_.calls_per_block),
        launch_pad(placement_seed(), p_.rank, &side == &reference_ ? 1 : 2));
    side.lengths = TimedLengths::make(c_.shared, outputs_layout_.specs, plan_.calls_per_block);
    for (int k = 0; k < plan_.calls_per_block; ++k) {
        side.views.push_back(side.worker->process->define_views(
            inputs_layout_.views(input_slots_->data(), k), outputs_layout_.views(side.outputs->data(), k),
            side.lengths ? side.lengths->slot(k) : nullptr));
    }
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
    inputs_->load(group * plan_.calls_per_block, plan_.calls_per_block, input_slots_->data());
    p_.device.fill(side.outputs->data(), kPoisonByte,
                   outputs_layout_.set_bytes * static_cast<std::size_t>(plan_.calls_per_block));
    if (side.lengths) {
        side.lengths->reset(p_.device);
    }
    if (cold_) {
        p_.device.flush_cache(); // what was just written must not be in L2 when the calls read it
    }
    p_.device.synchronize();
}

BlockTiming CheckedTiming::timed_request(Side& side, const std::vector<int>& views,
                                         const std::map<std::string, double>& params, double& judge_ms, bool graph) {
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
                                   side.worker->side + "'s process could not replay the graph it captured: " + why);
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
        const SlotScan scan = scan_outputs(side);
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
        changed_after_reply_ = scan_outputs(side).fingerprint != at_reply;
    }
    return timing;
}

SlotScan CheckedTiming::scan_outputs(const Side& side) {
    return p_.device.scan_slots(side.outputs->data(), outputs_layout_.set_bytes, plan_.calls_per_block,
                                kPoisonByte);
}

void CheckedTiming::warm_up(Side& side, bool graph) {
    if (options_.warmup <= 0) {
        return;
    }
    load_group(warm_group(), side); // the warm-up's own inputs: never timed, never shown again
    const auto params = p_.problem->params(inputs_->config(warm_group() * plan_.calls_per_block));
    const int blocks = (options_.warmup + plan_.calls_per_block - 1) / plan_.calls_per_block;
    for (int b = 0; b < blocks; ++b) {
        double ignored = 0;
        timed_request(side, side.views, params, ignored, graph);
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
    const BlockTiming timing = timed_request(side, side.views, params, judge_ms, graph);
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
    if (c_.block_timed) {
        c_.block_timed(side.worker->side);
    }
}

// Why call `call` of group `group` failed, in core's words (the device only counted).
CheckedTiming::CallFailure CheckedTiming::explain(int group, int call) {
    const int set = group * plan_.calls_per_block + call;
    CallFailure failure;
    auto outputs_of = [&](const Side& side, bool count_poison) {
        OutputSet outputs;
        const auto views = outputs_layout_.views(side.outputs->data(), call);
        for (std::size_t t = 0; t < views.size(); ++t) {
            Tensor tensor = Tensor::zeros(outputs_layout_.specs[t].dtype, outputs_layout_.specs[t].shape);
            if (tensor.nbytes() > 0) {
                p_.device.download(tensor.mutable_data(), views[t].data, tensor.nbytes());
            }
            if (count_poison) {
                const std::size_t size = dtype_size(tensor.dtype());
                for (std::int64_t i = 0; i < tensor.numel(); ++i) {
                    const std::byte* element = tensor.data() + static_cast<std::size_t>(i) * size;
                    failure.unwritten += std::all_of(element, element + size,
                                                     [](std::byte b) { return b == std::byte{kPoisonByte}; });
                }
            }
            outputs.add(outputs_layout_.specs[t].name, std::move(tensor));
        }
        outputs.values = p_.problem->checked_output_values(inputs_->config(set), p_.rank);
        return outputs;
    };
    const OutputComparison comparison =
        compare_outputs(outputs_of(reference_, false), outputs_of(candidate_, true),
                        CompareOptions{c_.atol, c_.rtol, 256}, inputs_->tie_rows(set));
    failure.message = comparison.pass ? std::string() : comparison.first_error;
    return failure;
}

void CheckedTiming::check_pair(int group, int candidate_block) {
    std::vector<MismatchQuery> queries;
    // Variable-length outputs: lengths first; only the valid prefix of agreeing ones is compared.
    const TimedLengthCheck lengths =
        TimedLengths::check(reference_.lengths.get(), candidate_.lengths.get(), p_.device,
                            outputs_layout_.specs, plan_.calls_per_block);
    for (int k = 0; k < plan_.calls_per_block; ++k) {
        const auto ref = outputs_layout_.views(reference_.outputs->data(), k);
        const auto cand = outputs_layout_.views(candidate_.outputs->data(), k);
        for (std::size_t t = 0; t < ref.size(); ++t) {
            const Shape& shape = outputs_layout_.specs[t].shape;
            const std::int64_t row = shape.empty() || shape[0] == 0 ? 1 : shape_numel(shape) / shape[0];
            const std::int64_t rows = lengths.rows[static_cast<std::size_t>(k)][t];
            queries.push_back({ref[t].data, cand[t].data, outputs_layout_.specs[t].dtype,
                               static_cast<std::size_t>(shape.empty() ? 1 : rows * row)});
        }
    }
    const auto counts = p_.device.count_mismatches(queries, c_.atol, c_.rtol);
    const std::size_t per_call = outputs_layout_.specs.size();
    std::int64_t elements = 0;
    for (const auto& spec : outputs_layout_.specs) {
        elements += shape_numel(spec.shape);
    }
    // A few elements beyond the tolerance, none far beyond, is how an honest kernel's different order of
    // summation shows on some of hundreds of fresh inputs: said, not held against the timing.
    const auto borderline_limit = static_cast<std::uint64_t>(std::max<std::int64_t>(1, elements / 10000));
    int failed = 0, borderline = 0;
    std::string message, kind, borderline_message;
    for (int k = 0; k < plan_.calls_per_block; ++k) {
        MismatchCount count;
        for (std::size_t t = 0; t < per_call; ++t) {
            count.mismatches += counts[static_cast<std::size_t>(k) * per_call + t].mismatches;
            count.gross += counts[static_cast<std::size_t>(k) * per_call + t].gross;
        }
        if (const std::string& length = lengths.messages[static_cast<std::size_t>(k)]; !length.empty()) {
            if (message.empty()) {
                message = "call " + std::to_string(k) + " of " + std::to_string(plan_.calls_per_block) +
                          ": " + length;
                kind = "length";
            }
            ++failed;
            continue;
        }
        if (count.mismatches == 0) {
            continue;
        }
        const bool is_borderline = count.gross == 0 && count.mismatches <= borderline_limit;
        std::string& first = is_borderline ? borderline_message : message;
        if (first.empty()) {
            // core's comparison decides the first one of each kind the device counted, and says why.
            const CallFailure failure = explain(group, k);
            if (failure.message.empty()) {
                continue; // core clears it: the device's count follows the same rule, so this is rare
            }
            first = "call " + std::to_string(k) + " of " + std::to_string(plan_.calls_per_block) + ": " +
                    failure.message;
            if (!is_borderline) {
                kind = failure.unwritten > 0 ? "unwritten" : "wrong";
            }
        }
        ++(is_borderline ? borderline : failed);
    }
    const std::string status = per_call == 0 ? "unchecked" : failed == 0 ? "pass" : "mismatch";
    if (per_call == 0) {
        message = "the problem has no tensor output to check";
    }
    p_.events.send({{"event", protocol::kTimedCheck},
                    {"rank", p_.rank},
                    {"block", candidate_block},
                    {"side", "candidate"},
                    {"calls", plan_.calls_per_block},
                    {"failed_calls", failed},
                    {"status", status},
                    {"kind", kind},
                    {"message", message},
                    {"borderline_calls", borderline},
                    {"borderline_message", borderline_message}});
}

void CheckedTiming::guard_scheduling(json& found) {
    if (c_.scheduling == nullptr || reference_.worker == nullptr) {
        return;
    }
    const std::pair<pid_t, const char*> processes[] = {
        {reference_.worker->process->pid(), "the reference's timing worker: "}, {::getpid(), "the judge: "}};
    for (const auto& [pid, who] : processes) {
        const SchedulingRestore restore = restore_scheduling(pid, *c_.scheduling);
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
    // (unmapping, a request) comes after, with the processes running.
    for (Side* side : {&reference_, &candidate_}) {
        side->still = std::make_unique<WorkerStillness>(side->worker);
    }
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

std::string CheckedTiming::capture_graphs() {
    std::string why;
    if (reference_.lengths || candidate_.lengths) {
        why = "the problem has variable-length outputs, whose lengths each call sets from the host, which a graph "
              "does not replay";
    }
    const auto params = p_.problem->params(inputs_->config(warm_group() * plan_.calls_per_block));
    for (int group = plan_.pairs; why.empty() && group < plan_.groups(); ++group) {
        if (p_.problem->params(inputs_->config(group * plan_.calls_per_block)) != params) {
            why = "the problem's parameters differ between draws, and a graph replays the ones it was captured with";
        }
    }
    for (Side* side : {&reference_, &candidate_}) {
        if (!why.empty()) {
            break;
        }
        side->still->thaw();
        std::string failure;
        // Capture only (nothing runs, no barrier): the ranks agree below before any replay.
        const bool captured = side->worker->process->capture_graph(side->views, params, failure);
        side->still->freeze();
        if (!captured) {
            why = side->worker->side + "'s calls cannot be captured in a CUDA graph: " + failure;
        }
    }
    // Every rank must replay, or none: the first rank's reason stands for all.
    const auto all = p_.rendezvous.all_gather(std::as_bytes(std::span(why.data(), why.size())));
    for (std::size_t r = 0; r < all.size(); ++r) {
        if (!all[r].empty()) {
            return "rank " + std::to_string(r) + ": " +
                   std::string(reinterpret_cast<const char*>(all[r].data()), all[r].size());
        }
    }
    return "";
}

void CheckedTiming::run_graph_series(const std::array<Side*, 2>& warm_order) {
    if (plan_.graph_pairs <= 0 || p_.device.on_host()) {
        return;
    }
    if (const std::string why = capture_graphs(); !why.empty()) {
        p_.events.send({{"event", protocol::kPerfResult},
                        {"rank", p_.rank},
                        {"protocol", "graph"},
                        {"side", "candidate"},
                        {"unavailable", why}});
        return;
    }
    for (Side* side : warm_order) {
        warm_up(*side, true);
    }
    const int first = 2 * plan_.pairs; // numbered after the launched blocks
    const auto order = block_order(plan_.graph_pairs, reference_first());
    for (std::size_t b = 0; b < order.size(); ++b) {
        const int block = first + static_cast<int>(b);
        time_block(block, order[b], true);
        if (b % 2 == 1) {
            check_pair(block / 2, order[b] == BlockSide::Candidate ? block : block - 1);
        }
    }
}

} // namespace

void run_checked_timing(const CheckedTimingContext& context, const PerfOptions& options) {
    CheckedTiming timing(context, options);
    timing.run();
}

} // namespace pkbw::engine
