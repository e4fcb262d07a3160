#include "perf_runner.h"

#include "pkbw/core/error.h"
#include "pkbw/core/perf_stats.h"
#include "pkbw/core/protocol.h"
#include "rendezvous.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

namespace pkbw::engine {
namespace {

using nlohmann::json;

std::size_t spec_bytes(const TensorSpec& spec) {
    return static_cast<std::size_t>(shape_numel(spec.shape)) * dtype_size(spec.dtype);
}

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
}

namespace {

std::size_t total_bytes(const std::vector<TensorSpec>& specs) {
    std::size_t total = 0;
    for (const auto& spec : specs) {
        total += spec_bytes(spec);
    }
    return total;
}

// A side whose calls run here: a library with its session, or a bare function (the NCCL loop).
class LocalSide final : public TimedSide {
public:
    LocalSide(const PerfContext& context, CallFunction call)
        : timed_(context.device, context.rendezvous)
        , call_(std::move(call)) {}
    void set_copies(int copies) { copies_ = copies; }

    BlockTiming pkb_series(int warmup, int iterations, json& extra) override {
        BlockTiming timing = timed_.pkb_series(call_, copies_, warmup, iterations);
        add_bracket(extra, timing);
        return timing;
    }
    BlockTiming pkbw_block(int iterations, int repeat, bool flush, int& next_copy, json& extra) override {
        BlockTiming timing = timed_.pkbw_block(call_, copies_, iterations, repeat, flush, next_copy);
        add_bracket(extra, timing);
        return timing;
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
    get("min_time_ms", o.min_time_ms);
    get("bare_nccl", o.bare_nccl);
    get("rotation_memory_fraction", o.rotation_memory_fraction);
    if (o.rotation != "copies" && o.rotation != "flush" && o.rotation != "none") {
        throw FormatError(source + ": field 'perf.rotation' must be copies, flush or none");
    }
    if (o.pairs < 1 || o.iterations < 1 || o.pkb_iterations < 1 || o.warmup < 0 || o.pkb_warmup < 0) {
        throw FormatError(source + ": perf iteration counts must be positive");
    }
    return o;
}

json to_json(const PerfOptions& o) {
    return {{"pkb", o.pkb},
            {"pkb_warmup", o.pkb_warmup},
            {"pkb_iterations", o.pkb_iterations},
            {"pkbw", o.pkbw},
            {"warmup", o.warmup},
            {"pairs", o.pairs},
            {"iterations", o.iterations},
            {"rotation", o.rotation},
            {"min_time_ms", o.min_time_ms},
            {"bare_nccl", o.bare_nccl},
            {"rotation_memory_fraction", o.rotation_memory_fraction}};
}

void add_bracket(json& extra, const BlockTiming& timing) {
    extra["span_ms"] = timing.span_ms;
    extra["host_ms"] = timing.host_ms;
    extra["calls"] = timing.calls;
}

std::unique_ptr<TimedSide> make_local_side(const PerfContext& context, const SolutionLibrary& library,
                                           SolutionSession& session, const TimingBuffers& buffers) {
    std::vector<Context> contexts;
    for (int copy = 0; copy < buffers.copies(); ++copy) {
        contexts.push_back(session.make_context(context.local_rank, buffers.inputs(copy), buffers.outputs()));
    }
    const SolutionLibrary* lib = &library;
    SolutionSession* s = &session;
    auto side = std::make_unique<LocalSide>(context, [lib, s, contexts](int copy) {
        if (lib->call(contexts[static_cast<std::size_t>(copy)]) != 0) {
            const std::string why = s->take_failure();
            throw Error(lib->side() +
                        " failed while being timed: " + (why.empty() ? "non-zero return" : why));
        }
    });
    side->set_copies(buffers.copies());
    return side;
}

void run_perf(const PerfContext& c, const PerfOptions& options, const PerfSides& sides_present,
              SharedBuffers& shared) {
    const auto input_specs = c.problem->input_specs(c.config, c.rank);
    const auto output_specs = c.problem->output_specs(c.config, c.rank);
    const auto host_inputs = c.problem->build_inputs(c.config, c.rank);
    const DeviceVersions versions = c.device.versions();
    const std::size_t l2 = versions.l2_bytes;
    Timing timing(c);

    using Factory = std::function<std::unique_ptr<TimedSide>(const TimingBuffers&)>;
    std::vector<std::pair<std::string, const Factory*>> present;
    if (sides_present.reference) {
        present.emplace_back("reference", &sides_present.reference);
    }
    if (sides_present.candidate) {
        present.emplace_back("candidate", &sides_present.candidate);
    }

    // The perf phase's own progress: one perf_progress event per timed block (PKB's series of a
    // side, a pkbw block, a bare-NCCL block), against the count known before the first.
    const bool bare = options.pkbw && options.bare_nccl && !input_specs.empty() && !output_specs.empty();
    const int blocks =
        (options.pkb ? static_cast<int>(present.size()) : 0) +
        (options.pkbw
             ? (present.size() == 1 ? options.pairs : static_cast<int>(block_order(options.pairs).size()))
             : 0) +
        (bare ? options.pairs : 0);
    int timed = 0;
    auto progress = [&](const std::string& protocol_name, const std::string& side) {
        c.events.send({{"event", protocol::kPerfProgress},
                       {"rank", c.rank},
                       {"block", ++timed},
                       {"blocks", blocks},
                       {"protocol", protocol_name},
                       {"side", side}});
    };

    const json start_clocks = timing.clocks();
    if (options.pkb) {
        const std::size_t first = input_specs.empty() ? 0 : spec_bytes(input_specs[0]);
        const int groups = pkb_groups(first, l2);
        TimingBuffers buffers(shared, input_specs, host_inputs, output_specs, groups, true);
        for (const auto& [name, factory] : present) {
            const auto side = (*factory)(buffers);
            json extra = {
                {"num_input_groups", groups}, {"l2_cache_size_bytes", l2}, {"timed_tensor_bytes", first}};
            const BlockTiming series = side->pkb_series(options.pkb_warmup, options.pkb_iterations, extra);
            timing.send("pkb", name, 0, series.samples_ms, extra);
            progress("pkb", name);
        }
    }
    if (options.pkbw) {
        // Enough copies of every input that one pass over them exceeds 3x L2, within a memory budget.
        const std::size_t per_copy = std::max<std::size_t>(total_bytes(input_specs), 1);
        int copies = 1;
        if (options.rotation == "copies" && l2 > 0) {
            copies = static_cast<int>(std::min<std::size_t>((3 * l2 + per_copy - 1) / per_copy, 128));
            if (versions.memory_bytes > 0) {
                const auto budget = static_cast<std::size_t>(options.rotation_memory_fraction *
                                                             static_cast<double>(versions.memory_bytes));
                copies = static_cast<int>(
                    std::clamp<std::size_t>(budget / per_copy, 1, static_cast<std::size_t>(copies)));
            }
            copies = std::max(copies, 1);
        }
        TimingBuffers buffers(shared, input_specs, host_inputs, output_specs, copies, false);
        std::vector<std::unique_ptr<TimedSide>> sides;
        std::vector<std::string> names;
        for (const auto& [name, factory] : present) {
            sides.push_back((*factory)(buffers));
            names.push_back(name);
        }
        std::vector<int> repeat(sides.size(), 1);
        int next_copy = 0;
        for (std::size_t s = 0; s < sides.size(); ++s) {
            if (options.warmup > 0) {
                json ignored = json::object();
                const auto warm =
                    sides[s]->pkbw_block(options.warmup, 1, false, next_copy, ignored).samples_ms;
                if (options.min_time_ms > 0) {
                    // Every rank must repeat the same number of calls: agree on the largest.
                    const double median = std::max(percentile(warm, 50), 1e-6);
                    std::int32_t mine = static_cast<std::int32_t>(std::ceil(options.min_time_ms / median));
                    mine = std::clamp(mine, 1, 100000);
                    std::int32_t agreed = 1;
                    for (const auto& part : c.rendezvous.all_gather(std::as_bytes(std::span(&mine, 1)))) {
                        std::int32_t value = 1;
                        std::memcpy(&value, part.data(), sizeof(value));
                        agreed = std::max(agreed, value);
                    }
                    repeat[s] = agreed;
                }
            }
        }
        const bool flush = options.rotation == "flush";
        const auto order = block_order(options.pairs);
        for (std::size_t b = 0; b < order.size(); ++b) {
            // With one side present (a dryrun), its blocks run back to back.
            const std::size_t s = sides.size() == 1 ? 0 : (order[b] == BlockSide::Reference ? 0 : 1);
            if (sides.size() == 1 && b >= static_cast<std::size_t>(options.pairs)) {
                break;
            }
            json extra = {{"input_copies", copies},
                          {"copy_bytes", per_copy},
                          {"l2_cache_size_bytes", l2},
                          {"repeat", repeat[s]},
                          {"rotation", options.rotation}};
            const auto block = sides[s]->pkbw_block(options.iterations, repeat[s], flush, next_copy, extra);
            timing.send("pkbw", names[s], static_cast<int>(b), block.samples_ms, extra);
            progress("pkbw", names[s]);
        }
        if (bare) {
            const WorkModel work = c.problem->work(c.config);
            const TensorSpec& in = input_specs[0];
            LocalSide bare(c, [&](int copy) {
                c.device.bare_collective(work.collective, buffers.inputs(copy)[0].data,
                                         buffers.outputs()[0].data,
                                         static_cast<std::size_t>(shape_numel(in.shape)), in.dtype);
            });
            bare.set_copies(copies);
            json warm = json::object();
            int warm_copy = 0;
            bare.pkbw_block(std::max(std::min(options.warmup, 20), 1), 1, false, warm_copy, warm);
            for (int b = 0; b < options.pairs; ++b) {
                json extra = {{"collective", collective_kind_name(work.collective)},
                              {"input_copies", copies}};
                const auto block = bare.pkbw_block(options.iterations, 1, flush, next_copy, extra);
                timing.send("pkbw", "bare_nccl", b, block.samples_ms, extra);
                progress("pkbw", "bare_nccl");
            }
        }
        if (sides_present.after_timing) {
            sides_present.after_timing(buffers);
        }
    }
    c.events.send({{"event", protocol::kPerfResult},
                   {"rank", c.rank},
                   {"protocol", "clocks"},
                   {"start", start_clocks},
                   {"end", timing.clocks()},
                   {"device", versions.device_name}});
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
