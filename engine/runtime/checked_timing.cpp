#include "checked_timing.h"

#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"
#include "pkbw/core/perf_stats.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/timing_checks.h"
#include "rendezvous.h"
#include "timing_inputs.h"
#include "trial_buffers.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

namespace pkbw::engine {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kProbeSpinUs = 20;     // the probe kernel's own length
constexpr int kRoundTripSamples = 25;   // empty blocks on the trusted worker
constexpr int kFreezeTimeoutMs = 5000;  // a tree that takes longer to stop is reported, not waited for
constexpr double kHostMemoryBudget = 512.0 * (1 << 20); // per rank, under the host backend's RLIMIT_AS

double ms_between(Clock::time_point start, Clock::time_point end) {
    return std::chrono::duration<double, std::milli>(end - start).count();
}

// K slots of one kind (inputs, or one side's outputs), set after set, each tensor 256-byte aligned.
struct SlotLayout {
    std::vector<TensorSpec> specs;
    std::vector<std::size_t> offsets;
    std::size_t set_bytes = 0;

    explicit SlotLayout(std::vector<TensorSpec> specs_)
        : specs(std::move(specs_)) {
        for (const auto& spec : specs) {
            offsets.push_back(set_bytes);
            set_bytes += aligned_bytes(bytes(spec));
        }
    }
    static std::size_t bytes(const TensorSpec& spec) {
        return static_cast<std::size_t>(shape_numel(spec.shape)) * dtype_size(spec.dtype);
    }
    std::vector<TensorView> views(void* base, int slot) const {
        std::vector<TensorView> out;
        for (std::size_t t = 0; t < specs.size(); ++t) {
            TensorView view{};
            view.name = specs[t].name.c_str();
            view.dtype = specs[t].dtype;
            view.ndim = static_cast<std::int32_t>(specs[t].shape.size());
            const auto strides = contiguous_strides(specs[t].shape);
            for (int d = 0; d < view.ndim && d < kMaxDims; ++d) {
                view.shape[d] = specs[t].shape[static_cast<std::size_t>(d)];
                view.strides[d] = strides[static_cast<std::size_t>(d)];
            }
            view.data = static_cast<std::byte*>(base) + set_bytes * static_cast<std::size_t>(slot) + offsets[t];
            out.push_back(view);
        }
        return out;
    }
};

// Memory in the judge's SharedBuffers, released when the timing ends.
class SharedSlots {
public:
    SharedSlots(SharedBuffers& shared, std::size_t bytes)
        : shared_(shared)
        , data_(shared.allocate(std::max<std::size_t>(bytes, 1))) {}
    ~SharedSlots() { shared_.release(data_); }
    SharedSlots(const SharedSlots&) = delete;
    SharedSlots& operator=(const SharedSlots&) = delete;
    void* data() const { return data_; }

private:
    SharedBuffers& shared_;
    void* data_;
};

std::uint64_t agree_on_seed(Rendezvous& judges, int rank) {
    std::uint64_t seed = 0;
    if (rank == 0) {
        std::random_device device;
        seed = (static_cast<std::uint64_t>(device()) << 32) ^ device();
    }
    const auto all = judges.all_gather(std::as_bytes(std::span(&seed, 1)));
    std::memcpy(&seed, all[0].data(), sizeof seed);
    return seed;
}

// Whether any rank says `mine`.
bool any_rank(Rendezvous& judges, bool mine) {
    const std::uint8_t value = mine ? 1 : 0;
    for (const auto& part : judges.all_gather(std::as_bytes(std::span(&value, 1)))) {
        if (std::to_integer<std::uint8_t>(part[0]) != 0) {
            return true;
        }
    }
    return false;
}

int min_over_ranks(Rendezvous& judges, int mine) {
    const std::int32_t value = mine;
    std::int32_t least = value;
    for (const auto& part : judges.all_gather(std::as_bytes(std::span(&value, 1)))) {
        std::int32_t other = 0;
        std::memcpy(&other, part.data(), sizeof other);
        least = std::min(least, other);
    }
    return least;
}

} // namespace

WorkerStillness::WorkerStillness(TimedWorker* worker)
    : worker_(worker) {
    freeze();
}

WorkerStillness::~WorkerStillness() {
    if (worker_ && frozen_) {
        worker_->process->thaw(kFreezeTimeoutMs);
    }
}

void WorkerStillness::freeze() {
    if (worker_ && !frozen_) {
        frozen_ = worker_->process->freeze(kFreezeTimeoutMs);
        failures_ += frozen_ ? 0 : 1;
    }
}

void WorkerStillness::thaw() {
    if (worker_ && frozen_) {
        worker_->process->thaw(kFreezeTimeoutMs);
        frozen_ = false;
    }
}

double WorkerStillness::tree_cpu_ms() const {
    return worker_ ? worker_->process->tree_cpu_ms() : 0.0;
}

int checked_timing_blocks(const PerfOptions& options, int sides) {
    return sides == 1 ? options.pairs : sides == 2 ? 2 * options.pairs : 0;
}

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
    BlockTiming timed_request(Side& side, const std::vector<int>& views, const std::map<std::string, double>& params,
                              double& judge_ms);
    void warm_up(Side& side);
    void time_block(int block, BlockSide which);
    void load_group(int group, Side& side);
    void check_pair(int group, int candidate_block);
    std::string first_failure(int group, int call);
    void send_plan();

    const CheckedTimingContext& c_;
    const PerfContext& p_;
    const PerfOptions& options_;
    SlotLayout inputs_layout_, outputs_layout_;
    CheckedTimingPlan plan_;
    std::uint64_t seed_ = 0;
    InputMode mode_ = InputMode::Pkb;
    std::string inputs_note_; // a limit of the check (a warning)
    std::string inputs_info_; // what the inputs are (the report says it)
    std::unique_ptr<TimingInputs> inputs_;
    std::unique_ptr<SharedSlots> input_slots_;
    Side reference_, candidate_;
    double round_trip_ms_ = 0;
    double idle_probe_us_ = 0;
};

void CheckedTiming::plan() {
    const DeviceVersions versions = p_.device.versions();
    const double budget = p_.device.on_host() || versions.memory_bytes == 0
                              ? kHostMemoryBudget
                              : options_.rotation_memory_fraction * static_cast<double>(versions.memory_bytes);
    const std::size_t l2 = options_.rotation == "none" ? 0 : versions.l2_bytes;
    plan_ = plan_checked_timing(inputs_layout_.set_bytes, outputs_layout_.set_bytes, l2,
                                static_cast<std::size_t>(budget), options_.iterations, options_.pairs);
    // Every rank must make the same number of calls: their calls may be collectives.
    const int agreed = min_over_ranks(p_.rendezvous, plan_.calls_per_block);
    if (agreed != plan_.calls_per_block) {
        const std::string reason = plan_.reason;
        plan_ = plan_checked_timing(inputs_layout_.set_bytes, outputs_layout_.set_bytes, l2, 0, agreed,
                                    options_.pairs);
        plan_.calls_per_block = agreed; // never more than a rank could hold, whatever L2 asks
        plan_.staging_bytes = (static_cast<std::size_t>(plan_.pairs) + 1) * agreed * inputs_layout_.set_bytes;
        plan_.slot_bytes = static_cast<std::size_t>(agreed) * (inputs_layout_.set_bytes + 2 * outputs_layout_.set_bytes);
        plan_.cold_inputs = l2 == 0 || static_cast<std::size_t>(agreed) * inputs_layout_.set_bytes >= 3 * l2;
        plan_.reason = reason + "; " + std::to_string(agreed) + " on every rank (the fewest any rank could hold)";
    }
    seed_ = agree_on_seed(p_.rendezvous, p_.rank);
    mode_ = p_.config.input_mode;
    if (any_rank(p_.rendezvous, inputs_repeat(*p_.problem, p_.config, p_.rank, seed_, mode_))) {
        if (mode_ == InputMode::Pkb) {
            mode_ = InputMode::Exact;
            inputs_info_ = "PKB's inputs for this problem are the same every call: the timed calls read "
                           "exact-mode draws instead (same shapes and dtypes)";
        }
        if (any_rank(p_.rendezvous, inputs_repeat(*p_.problem, p_.config, p_.rank, seed_, mode_))) {
            inputs_note_ = "this problem's inputs are the same every call: a candidate that caches its "
                           "result by content cannot be told from one that computes";
        }
    }
    const unsigned cores = std::max(std::thread::hardware_concurrency(), 1u);
    const int threads = static_cast<int>(std::clamp(cores / static_cast<unsigned>(p_.config.world_size), 1u, 16u));
    inputs_ = std::make_unique<TimingInputs>(p_.device, *p_.problem, p_.config, p_.rank, seed_, mode_,
                                             (plan_.pairs + 1) * plan_.calls_per_block, threads);
    input_slots_ = std::make_unique<SharedSlots>(
        c_.shared, inputs_layout_.set_bytes * static_cast<std::size_t>(plan_.calls_per_block));
}

void CheckedTiming::prepare_side(Side& side) {
    side.outputs = std::make_unique<SharedSlots>(
        c_.shared, outputs_layout_.set_bytes * static_cast<std::size_t>(plan_.calls_per_block));
    for (int k = 0; k < plan_.calls_per_block; ++k) {
        side.views.push_back(side.worker->process->define_views(inputs_layout_.views(input_slots_->data(), k),
                                                                 outputs_layout_.views(side.outputs->data(), k)));
    }
}

double CheckedTiming::calibrate_round_trip() {
    if (!reference_.worker) {
        return 0; // no trusted worker: nothing is subtracted (the plan says so)
    }
    // The same path as a block's (timed_request): the thaw, the round trip, the barriers.
    std::vector<double> samples;
    for (int i = 0; i < kRoundTripSamples; ++i) {
        double judge_ms = 0;
        timed_request(reference_, {}, {}, judge_ms);
        samples.push_back(judge_ms);
    }
    return percentile(samples, 50);
}

void CheckedTiming::load_group(int group, Side& side) {
    // Inputs come back to their drawn values before every block (a side may change them in place),
    // and the side's outputs are poisoned, so an element no call wrote cannot pass.
    inputs_->load(group * plan_.calls_per_block, plan_.calls_per_block, input_slots_->data());
    p_.device.fill(side.outputs->data(), kPoisonByte,
                   outputs_layout_.set_bytes * static_cast<std::size_t>(plan_.calls_per_block));
    p_.device.synchronize();
}

BlockTiming CheckedTiming::timed_request(Side& side, const std::vector<int>& views,
                                         const std::map<std::string, double>& params, double& judge_ms) {
    p_.rendezvous.barrier();
    const auto start = Clock::now();
    side.still->thaw();
    BlockTiming timing = side.worker->process->timed_calls(views, params, true);
    // The block ends when every rank's worker has answered: a rank's work left after its answer is
    // inside the time, and rank 0's worker, which serves its group's barriers, is done before a freeze.
    p_.rendezvous.barrier();
    judge_ms = ms_between(start, Clock::now());
    side.still->freeze();
    return timing;
}

void CheckedTiming::warm_up(Side& side) {
    if (options_.warmup <= 0) {
        return;
    }
    load_group(plan_.pairs, side); // the warm-up's own inputs: never timed, never shown again
    const auto params = p_.problem->params(inputs_->config(plan_.pairs * plan_.calls_per_block));
    const int blocks = (options_.warmup + plan_.calls_per_block - 1) / plan_.calls_per_block;
    for (int b = 0; b < blocks; ++b) {
        double ignored = 0;
        timed_request(side, side.views, params, ignored);
    }
}

void CheckedTiming::time_block(int block, BlockSide which) {
    Side& side = which == BlockSide::Reference ? reference_ : candidate_;
    const int group = block / 2;
    load_group(group, side);
    const bool probing = !p_.device.on_host();
    const bool watching = which == BlockSide::Reference && candidate_.worker != nullptr;
    const double cpu_before = watching ? candidate_.still->tree_cpu_ms() : 0;
    const double probe_before = probing ? p_.device.probe_us(kProbeSpinUs) : 0;
    const auto params = p_.problem->params(inputs_->config(group * plan_.calls_per_block));

    double judge_ms = 0;
    const BlockTiming timing = timed_request(side, side.views, params, judge_ms);
    // The candidate is frozen again here: a kernel of its still running now holds the GPU.
    const double probe_after = probing ? p_.device.probe_us(kProbeSpinUs) : 0;

    json event = {{"event", protocol::kPerfResult},
                  {"rank", p_.rank},
                  {"protocol", "pkbw"},
                  {"side", side.worker->side},
                  {"block", block},
                  {"samples_ms", {judge_call_ms(judge_ms, round_trip_ms_, timing.calls)}},
                  {"call_samples_ms", timing.samples_ms},
                  {"span_ms", timing.span_ms},
                  {"calls", timing.calls},
                  {"judge_ms", judge_ms},
                  {"round_trip_ms", round_trip_ms_}};
    if (probing) {
        event["probe_before_us"] = probe_before;
        event["probe_after_us"] = probe_after;
        event["idle_probe_us"] = idle_probe_us_;
    }
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
std::string CheckedTiming::first_failure(int group, int call) {
    const int set = group * plan_.calls_per_block + call;
    auto outputs_of = [&](const Side& side) {
        OutputSet outputs;
        const auto views = outputs_layout_.views(side.outputs->data(), call);
        for (std::size_t t = 0; t < views.size(); ++t) {
            Tensor tensor = Tensor::zeros(outputs_layout_.specs[t].dtype, outputs_layout_.specs[t].shape);
            if (tensor.nbytes() > 0) {
                p_.device.download(tensor.mutable_data(), views[t].data, tensor.nbytes());
            }
            outputs.add(outputs_layout_.specs[t].name, std::move(tensor));
        }
        outputs.values = p_.problem->checked_output_values(inputs_->config(set), p_.rank);
        return outputs;
    };
    const OutputComparison comparison =
        compare_outputs(outputs_of(reference_), outputs_of(candidate_), CompareOptions{c_.atol, c_.rtol, 256},
                        inputs_->tie_rows(set));
    return comparison.pass ? std::string() : comparison.first_error;
}

void CheckedTiming::check_pair(int group, int candidate_block) {
    std::vector<MismatchQuery> queries;
    for (int k = 0; k < plan_.calls_per_block; ++k) {
        const auto ref = outputs_layout_.views(reference_.outputs->data(), k);
        const auto cand = outputs_layout_.views(candidate_.outputs->data(), k);
        for (std::size_t t = 0; t < ref.size(); ++t) {
            queries.push_back({ref[t].data, cand[t].data, outputs_layout_.specs[t].dtype,
                               static_cast<std::size_t>(shape_numel(outputs_layout_.specs[t].shape))});
        }
    }
    const auto counts = p_.device.count_mismatches(queries, c_.atol, c_.rtol);
    const std::size_t per_call = outputs_layout_.specs.size();
    int failed = 0;
    std::string message;
    for (int k = 0; k < plan_.calls_per_block; ++k) {
        std::uint64_t mismatches = 0;
        for (std::size_t t = 0; t < per_call; ++t) {
            mismatches += counts[static_cast<std::size_t>(k) * per_call + t];
        }
        if (mismatches == 0) {
            continue;
        }
        if (message.empty()) {
            // core's comparison decides the first one the device counted, and says why.
            message = first_failure(group, k);
            if (message.empty()) {
                continue; // core clears it: the device's count follows the same rule, so this is rare
            }
            message = "call " + std::to_string(k) + " of " + std::to_string(plan_.calls_per_block) + ": " + message;
        }
        ++failed;
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
                    {"message", message}});
}

void CheckedTiming::send_plan() {
    json event = {{"event", protocol::kTimingPlan},
                  {"rank", p_.rank},
                  {"calls_per_block", plan_.calls_per_block},
                  {"pairs", plan_.pairs},
                  {"cold_inputs", plan_.cold_inputs},
                  {"reason", plan_.reason},
                  {"input_mode", std::string(input_mode_name(mode_))},
                  {"inputs_note", inputs_note_},
                  {"inputs_info", inputs_info_},
                  {"round_trip_ms", round_trip_ms_},
                  {"round_trip_trusted", reference_.worker != nullptr},
                  {"checked", reference_.worker != nullptr && candidate_.worker != nullptr}};
    if (!p_.device.on_host()) {
        event["idle_probe_us"] = idle_probe_us_;
        event["probe_spin_us"] = kProbeSpinUs;
    }
    if (candidate_.worker) {
        event["containment"] = candidate_.worker->process->container().describe();
    }
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
    round_trip_ms_ = calibrate_round_trip();
    if (!p_.device.on_host()) {
        std::vector<double> probes;
        for (int i = 0; i < 5; ++i) {
            probes.push_back(p_.device.probe_us(kProbeSpinUs));
        }
        idle_probe_us_ = *std::min_element(probes.begin(), probes.end());
    }
    send_plan();
    for (Side* side : {&reference_, &candidate_}) {
        if (side->worker) {
            warm_up(*side);
        }
    }
    const auto order = block_order(plan_.pairs);
    const bool both = reference_.worker && candidate_.worker;
    for (std::size_t b = 0; b < order.size(); ++b) {
        const BlockSide which = both ? order[b] : (reference_.worker ? BlockSide::Reference : BlockSide::Candidate);
        if (!both && b % 2 == 1) {
            continue; // one side: one block per pair
        }
        time_block(static_cast<int>(b), which);
        if (both && b % 2 == 1) {
            const int candidate_block = order[b] == BlockSide::Candidate ? static_cast<int>(b) : static_cast<int>(b - 1);
            check_pair(static_cast<int>(b / 2), candidate_block);
        }
    }
}

} // namespace

void run_checked_timing(const CheckedTimingContext& context, const PerfOptions& options) {
    CheckedTiming timing(context, options);
    timing.run();
}

} // namespace pkbw::engine
