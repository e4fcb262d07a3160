#include "perf_runner.h"

#include "checked_timing.h"
#include "pkbw/core/error.h"
#include "pkbw/core/perf_stats.h"
#include "pkbw/core/protocol.h"
#include "rendezvous.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

namespace pkbw::engine {
namespace {

using nlohmann::json;

TensorView view_of(const TensorSpec& spec, void* data) {
    TensorView view{};
    view.name = spec.name.c_str();
    view.dtype = spec.dtype;
    view.ndim = static_cast<std::int32_t>(spec.shape.size());
    const auto strides = contiguous_strides(spec.shape);
    for (std::size_t i = 0; i < spec.shape.size() && i < static_cast<std::size_t>(kMaxDims); ++i) {
        view.shape[i] = spec.shape[i];
        view.strides[i] = strides[i];
    }
    view.data = data;
    return view;
}

} // namespace

TimingBuffers::TimingBuffers(SharedBuffers& shared, const std::vector<TensorSpec>& input_specs,
                             const std::vector<Tensor>& host_inputs,
                             const std::vector<TensorSpec>& output_specs, int copies, bool rotate_first_only)
    : shared_(shared)
    , input_specs_(input_specs)
    , output_specs_(output_specs) {
    Device& device = shared_.device();
    for (const auto& spec : output_specs_) {
        outputs_.push_back(shared_.allocate(spec_bytes(spec)));
        output_views_.push_back(view_of(spec, outputs_.back()));
        if (spec.variable_length && lengths_ == nullptr) {
            lengths_ = shared_.allocate(output_specs_.size() * sizeof(std::int64_t));
        }
    }
    input_views_.resize(static_cast<std::size_t>(copies));
    for (int copy = 0; copy < copies; ++copy) {
        for (std::size_t i = 0; i < input_specs_.size(); ++i) {
            void* data;
            if (copy > 0 && rotate_first_only && i > 0) {
                data = const_cast<void*>(input_views_[0][i].data); // PKB rotates only the first input
            } else {
                data = shared_.allocate(spec_bytes(input_specs_[i]));
                owned_.push_back(data);
                if (host_inputs[i].nbytes() > 0) {
                    device.upload(data, host_inputs[i].data(), host_inputs[i].nbytes());
                }
            }
            input_views_[static_cast<std::size_t>(copy)].push_back(view_of(input_specs_[i], data));
        }
    }
    device.synchronize();
}

TimingBuffers::~TimingBuffers() {
    for (void* p : owned_) {
        shared_.release(p);
    }
    for (void* p : outputs_) {
        shared_.release(p);
    }
    if (lengths_ != nullptr) {
        shared_.release(lengths_);
    }
}

namespace {

std::size_t total_bytes(const std::vector<TensorSpec>& specs) {
    std::size_t total = 0;
    for (const auto& spec : specs) {
        total += spec_bytes(spec);
    }
    return total;
}

// A loop the judge runs itself, trusted: the bare NCCL collective and calibration.
class LocalSide {
public:
    LocalSide(const PerfContext& context, CallFunction call)
        : timed_(context.device, context.rendezvous)
        , call_(std::move(call)) {}
    void set_copies(int copies) { copies_ = copies; }

    BlockTiming pkbw_block(int iterations, int repeat, bool flush, int& next_copy, json&) {
        return timed_.pkbw_block(call_, copies_, iterations, repeat, flush, next_copy);
    }

private:
    TimedCalls timed_;
    CallFunction call_;
    int copies_ = 1;
};

class Timing {
public:
    Timing(const PerfContext& context)
        : c_(context) {}

    json clocks() {
        const auto [sm, memory] = c_.device.clocks_mhz();
        return {{"sm_mhz", sm}, {"memory_mhz", memory}};
    }

    void send(const std::string& protocol, const std::string& side, int block,
              const std::vector<double>& samples, json extra = json::object()) {
        json event = {{"event", protocol::kPerfResult},
                      {"rank", c_.rank},
                      {"protocol", protocol},
                      {"side", side},
                      {"block", block},
                      {"samples_ms", samples}};
        event.update(extra);
        c_.events.send(event);
    }

private:
    const PerfContext& c_;
};

int pkb_groups(std::size_t first_input_bytes, std::size_t l2_bytes) {
    if (first_input_bytes == 0 || first_input_bytes >= 3 * l2_bytes) {
        return 1;
    }
    return static_cast<int>(std::clamp<std::size_t>(3 * l2_bytes / first_input_bytes + 1, 2, 128));
}

} // namespace

PerfOptions parse_perf_options(const json& perf, const std::string& source) {
    PerfOptions o;
    if (perf.is_null()) {
        return o;
    }
    if (!perf.is_object()) {
        throw FormatError(source + ": field 'perf' must be an object");
    }
    auto get = [&](const char* name, auto& target) {
        if (const auto it = perf.find(name); it != perf.end()) {
            try {
                target = it->get<std::decay_t<decltype(target)>>();
            } catch (const json::exception&) {
                throw FormatError(source + ": field 'perf." + name + "' has the wrong type");
            }
        }
    };
    get("pkb", o.pkb);
    get("pkb_warmup", o.pkb_warmup);
    get("pkb_iterations", o.pkb_iterations);
    get("pkbw", o.pkbw);
    get("warmup", o.warmup);
    get("pairs", o.pairs);
    get("iterations", o.iterations);
    get("rotation", o.rotation);
    get("bare_nccl", o.bare_nccl);
    get("rotation_memory_fraction", o.rotation_memory_fraction);
    get("launch_index", o.launch_index);
    get("launch_seed", o.launch_seed);
    get("reference_first", o.reference_first);
    get("graph", o.graph);
    if (o.rotation == "flush" || perf.value("min_time_ms", 0.0) > 0) {
        throw FormatError(source + ": perf.rotation 'flush' and perf.min_time_ms are gone: every timed call "
                                   "reads fresh inputs of its own, spanning 3x L2 (docs/perf.md)");
    }
    if (o.rotation != "copies" && o.rotation != "none") {
        throw FormatError(source + ": field 'perf.rotation' must be copies or none");
    }
    if (o.pairs < 1 || o.iterations < 1 || o.pkb_iterations < 1 || o.warmup < 0 || o.pkb_warmup < 0) {
        throw FormatError(source + ": perf iteration counts must be positive");
    }
    return o;
}

namespace {

// Enough copies of every input that one pass over them exceeds 3x L2, within a memory budget (the
// bare NCCL loop's rotation).
int rotation_copies(const PerfOptions& options, std::size_t per_copy, const DeviceVersions& versions) {
    if (options.rotation != "copies" || versions.l2_bytes == 0) {
        return 1;
    }
    const std::size_t l2 = versions.l2_bytes;
    int copies = static_cast<int>(std::min<std::size_t>((3 * l2 + per_copy - 1) / per_copy, 128));
    if (versions.memory_bytes > 0) {
        const auto budget = static_cast<std::size_t>(options.rotation_memory_fraction *
                                                     static_cast<double>(versions.memory_bytes));
        copies =
            static_cast<int>(std::clamp<std::size_t>(budget / per_copy, 1, static_cast<std::size_t>(copies)));
    }
    return std::max(copies, 1);
}

// PKB's protocol, in each side's worker (the PKB-compatible figure: measured inside the process, as
// PKB measures it, so a candidate can steer it; never the headline).
void time_pkb_series(const PerfContext& c, const PerfOptions& options,
                     const std::vector<TimedWorker*>& present, SharedBuffers& shared,
                     const std::function<void(const std::string&)>& progress) {
    const auto input_specs = c.problem->input_specs(c.config, c.rank);
    const auto output_specs = c.problem->output_specs(c.config, c.rank);
    const std::size_t l2 = c.device.versions().l2_bytes;
    const std::size_t first = input_specs.empty() ? 0 : spec_bytes(input_specs[0]);
    const int groups = pkb_groups(first, l2);
    TimingBuffers buffers(shared, input_specs, c.problem->build_inputs(c.config, c.rank), output_specs,
                          groups, true);
    // The inputs' own parameters: the workers keep the eval's last trial's.
    const auto params = c.problem->params(c.config);
    std::vector<std::vector<int>> views(present.size());
    TimedWorker* candidate = nullptr;
    for (std::size_t w = 0; w < present.size(); ++w) {
        for (int copy = 0; copy < buffers.copies(); ++copy) {
            views[w].push_back(present[w]->process->define_views(buffers.inputs(copy), buffers.outputs(),
                                                                 buffers.output_lengths()));
        }
        candidate = present[w]->untrusted ? present[w] : candidate;
    }
    for (std::size_t w = 0; w < present.size(); ++w) {
        TimedWorker* worker = present[w];
        c.rendezvous.barrier();
        BlockTiming timing;
        {
            // The candidate is still while the reference is timed; in its own series it runs.
            WorkerStillness still(worker->untrusted ? nullptr : candidate);
            timing =
                worker->process->pkb_series(views[w], params, options.pkb_warmup, options.pkb_iterations);
        }
        json event = {{"event", protocol::kPerfResult},
                      {"rank", c.rank},
                      {"protocol", "pkb"},
                      {"side", worker->side},
                      {"block", 0},
                      {"samples_ms", timing.samples_ms},
                      {"span_ms", timing.span_ms},
                      {"calls", timing.calls},
                      {"num_input_groups", groups},
                      {"l2_cache_size_bytes", l2},
                      {"timed_tensor_bytes", first}};
        c.events.send(event);
        progress(worker->side);
    }
}

// The problem's collective as a bare NCCL loop on the problem's first input (--bare-nccl), timed here.
void time_bare_nccl(const PerfContext& c, const PerfOptions& options, SharedBuffers& shared,
                    const std::function<void(const std::string&)>& progress) {
    const auto input_specs = c.problem->input_specs(c.config, c.rank);
    const auto output_specs = c.problem->output_specs(c.config, c.rank);
    const int copies =
        rotation_copies(options, std::max<std::size_t>(total_bytes(input_specs), 1), c.device.versions());
    TimingBuffers buffers(shared, input_specs, c.problem->build_inputs(c.config, c.rank), output_specs,
                          copies, false);
    const WorkModel work = c.problem->work(c.config);
    const TensorSpec& in = input_specs[0];
    LocalSide bare(c, [&](int copy) {
        c.device.bare_collective(work.collective, buffers.inputs(copy)[0].data, buffers.outputs()[0].data,
                                 static_cast<std::size_t>(shape_numel(in.shape)), in.dtype);
    });
    bare.set_copies(copies);
    json ignored = json::object();
    int next_copy = 0;
    bare.pkbw_block(std::max(std::min(options.warmup, 20), 1), 1, false, next_copy, ignored);
    for (int b = 0; b < options.pairs; ++b) {
        const auto block = bare.pkbw_block(options.iterations, 1, false, next_copy, ignored);
        c.events.send({{"event", protocol::kPerfResult},
                       {"rank", c.rank},
                       {"protocol", "pkbw"},
                       {"side", "bare_nccl"},
                       {"block", b},
                       {"samples_ms", block.samples_ms},
                       {"collective", collective_kind_name(work.collective)},
                       {"input_copies", copies}});
        progress("bare_nccl");
    }
}

} // namespace

void run_perf(const PerfContext& c, const PerfOptions& options, const PerfWorkers& workers,
              SharedBuffers& shared) {
    std::vector<TimedWorker*> present;
    for (TimedWorker* worker : {workers.reference, workers.candidate}) {
        if (worker != nullptr) {
            present.push_back(worker);
        }
    }
    const auto input_specs = c.problem->input_specs(c.config, c.rank);
    const bool bare = options.pkbw && options.bare_nccl && !input_specs.empty() &&
                      !c.problem->output_specs(c.config, c.rank).empty();
    // The perf phase's own progress: one perf_progress event per timed block, against a count known
    // before the first.
    const int sides = static_cast<int>(present.size());
    const int blocks = (options.pkb ? sides : 0) +
                       (options.pkbw ? checked_timing_blocks(options, sides) : 0) +
                       (bare ? options.pairs : 0);
    int timed = 0;
    auto progress_of = [&](const std::string& protocol_name) {
        return [&, protocol_name](const std::string& side) {
            c.events.send({{"event", protocol::kPerfProgress},
                           {"rank", c.rank},
                           {"block", ++timed},
                           {"blocks", blocks},
                           {"protocol", protocol_name},
                           {"side", side}});
        };
    };
    const auto [sm, memory] = c.device.clocks_mhz();
    const json start_clocks = {{"sm_mhz", sm}, {"memory_mhz", memory}};
    if (options.pkb) {
        time_pkb_series(c, options, present, shared, progress_of("pkb"));
    }
    if (options.pkbw && !present.empty()) {
        if (workers.inputs == nullptr) {
            throw Error("pkbw's timing has no inputs (start_timing_inputs was not called)");
        }
        const CheckedTimingContext context{c,
                                           shared,
                                           workers.atol,
                                           workers.rtol,
                                           workers.reference,
                                           workers.candidate,
                                           workers.inputs,
                                           workers.scheduling,
                                           workers.placement,
                                           progress_of("pkbw")};
        run_checked_timing(context, options);
    }
    if (bare) {
        time_bare_nccl(c, options, shared, progress_of("pkbw"));
    }
    const auto [sm_end, memory_end] = c.device.clocks_mhz();
    c.events.send({{"event", protocol::kPerfResult},
                   {"rank", c.rank},
                   {"protocol", "clocks"},
                   {"start", start_clocks},
                   {"end", {{"sm_mhz", sm_end}, {"memory_mhz", memory_end}}},
                   {"device", c.device.versions().device_name}});
}

std::unique_ptr<TimingInputs> start_timing_inputs(Rendezvous& judges, const Problem& problem,
                                                  const ProblemConfig& config, int rank,
                                                  const PerfOptions& options, std::size_t memory_bytes,
                                                  bool graphs) {
    if (!options.pkbw) {
        return nullptr;
    }
    TimingRequest request;
    request.calls = options.iterations;
    request.pairs = options.pairs;
    request.graph_pairs = options.graph && graphs ? options.pairs : 0;
    request.cold = options.rotation == "copies";
    request.memory_fraction = options.rotation_memory_fraction;
    request.memory_bytes = memory_bytes;
    // The drawing shares the machine with the workers' start and the eval's trials: a thread per core
    // of this rank's share (the plan lowers the calls whose sets these threads would draw too slowly).
    const unsigned cores = std::max(std::thread::hardware_concurrency(), 1u);
    request.threads = static_cast<int>(std::clamp(cores / static_cast<unsigned>(config.world_size), 1u, 16u));
    const TimingAgreement agreed = agree_on_timing(judges, problem, config, rank, request);
    return std::make_unique<TimingInputs>(problem, config, rank, agreed, request.threads);
}

void run_calibration(const PerfContext& c, const std::vector<std::size_t>& sizes, int iterations) {
    Timing timing(c);
    const int world = c.rendezvous.world_size();
    // Each size is its own block, so the launcher can tell the series apart.
    for (std::size_t index = 0; index < sizes.size(); ++index) {
        const std::size_t bytes = sizes[index];
        const std::size_t count = bytes / 2; // bf16 elements
        void* input = c.device.allocate(bytes);
        void* output = c.device.allocate(bytes * static_cast<std::size_t>(world));
        c.device.fill(input, 0, bytes);
        for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather}) {
            const std::size_t per_rank = kind == CollectiveKind::AllGather ? count / world : count;
            const std::string name(collective_kind_name(kind));
            LocalSide side(
                c, [&](int) { c.device.bare_collective(kind, input, output, per_rank, DType::BF16); });
            json ignored = json::object();
            int next = 0;
            side.pkbw_block(5, 1, false, next, ignored);
            const auto samples = side.pkbw_block(iterations, 1, false, next, ignored).samples_ms;
            timing.send("calibrate", name, static_cast<int>(index), samples, {{"bytes", bytes}});
        }
        c.device.release(input);
        c.device.release(output);
    }
    // Peer copy: rank r reads rank (r+1)'s buffer through its IPC mapping (copy engine).
    if (world > 1) {
        for (std::size_t index = 0; index < sizes.size(); ++index) {
            const std::size_t bytes = sizes[index];
            const SymmetricAllocation buffer = c.device.allocate_symmetric(bytes, c.rendezvous);
            void* local = c.device.allocate(bytes);
            const void* peer = buffer.peers[static_cast<std::size_t>((c.rank + 1) % world)];
            LocalSide side(c, [&](int) { c.device.copy_async(local, peer, bytes); });
            json ignored = json::object();
            int next = 0;
            side.pkbw_block(1, 1, false, next, ignored);
            const auto samples = side.pkbw_block(iterations, 1, false, next, ignored).samples_ms;
            timing.send("calibrate", "peer_copy", static_cast<int>(index), samples, {{"bytes", bytes}});
            c.device.synchronize();
            c.rendezvous.barrier();
            c.device.release(local);
        }
    }
}

} // namespace pkbw::engine
