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

// Copies of the inputs on the device (set k of the rotation), one set of outputs, and the views
// a call needs for each set.
class TimingBuffers {
public:
    TimingBuffers(Device& device, const std::vector<TensorSpec>& input_specs,
                  const std::vector<Tensor>& host_inputs, const std::vector<TensorSpec>& output_specs,
                  int copies, bool rotate_first_only)
        : device_(device)
        , input_specs_(input_specs)
        , output_specs_(output_specs) {
        for (const auto& spec : output_specs_) {
            outputs_.push_back(device_.allocate(spec_bytes(spec)));
            device_.fill(outputs_.back(), 0, spec_bytes(spec));
            output_views_.push_back(view_of(spec, outputs_.back()));
        }
        input_views_.resize(static_cast<std::size_t>(copies));
        for (int copy = 0; copy < copies; ++copy) {
            for (std::size_t i = 0; i < input_specs_.size(); ++i) {
                void* data;
                if (copy > 0 && rotate_first_only && i > 0) {
                    data = const_cast<void*>(input_views_[0][i].data); // PKB rotates only the first input
                } else {
                    data = device_.allocate(spec_bytes(input_specs_[i]));
                    owned_.push_back(data);
                    if (host_inputs[i].nbytes() > 0) {
                        device_.upload(data, host_inputs[i].data(), host_inputs[i].nbytes());
                    }
                }
                input_views_[static_cast<std::size_t>(copy)].push_back(view_of(input_specs_[i], data));
            }
        }
        device_.synchronize();
    }
    ~TimingBuffers() {
        for (void* p : owned_) {
            device_.release(p);
        }
        for (void* p : outputs_) {
            device_.release(p);
        }
    }
    TimingBuffers(const TimingBuffers&) = delete;
    TimingBuffers& operator=(const TimingBuffers&) = delete;

    int copies() const { return static_cast<int>(input_views_.size()); }
    const std::vector<TensorView>& inputs(int copy) const {
        return input_views_[static_cast<std::size_t>(copy)];
    }
    const std::vector<TensorView>& outputs() const { return output_views_; }

private:
    Device& device_;
    std::vector<TensorSpec> input_specs_, output_specs_;
    std::vector<void*> owned_, outputs_;
    std::vector<std::vector<TensorView>> input_views_;
    std::vector<TensorView> output_views_;
};

// A side to time: a function that queues one call using input set `copy`.
struct Side {
    std::string name;
    std::function<void(int copy)> call;
};

std::size_t total_bytes(const std::vector<TensorSpec>& specs) {
    std::size_t total = 0;
    for (const auto& spec : specs) {
        total += spec_bytes(spec);
    }
    return total;
}

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

    // PKB: warmup calls, then one event before and one after each of `iterations` calls, no host
    // synchronisation in between (utils/performance.py).
    std::vector<double> pkb_series(const Side& side, int copies, int warmup, int iterations) {
        c_.device.synchronize();
        c_.rendezvous.barrier();
        for (int i = 0; i < warmup; ++i) {
            side.call(i % copies);
        }
        c_.device.synchronize();
        auto timer = c_.device.make_timer(iterations + 1);
        timer->mark(0);
        for (int i = 0; i < iterations; ++i) {
            side.call(i % copies);
            timer->mark(i + 1);
        }
        c_.device.synchronize();
        return timer->elapsed_ms();
    }

    // pkbw: ranks start the block together; each sample brackets `repeat` calls (optionally after a
    // cache flush, kept outside the bracket).
    std::vector<double> pkbw_block(const Side& side, int copies, int iterations, int repeat, bool flush,
                                   int& next_copy) {
        c_.device.synchronize();
        c_.rendezvous.barrier();
        auto timer = c_.device.make_timer(2 * iterations);
        for (int i = 0; i < iterations; ++i) {
            if (flush) {
                c_.device.flush_cache();
            }
            timer->mark(2 * i);
            for (int r = 0; r < repeat; ++r) {
                side.call(next_copy);
                next_copy = (next_copy + 1) % copies;
            }
            timer->mark(2 * i + 1);
        }
        c_.device.synchronize();
        const auto consecutive = timer->elapsed_ms();
        std::vector<double> samples;
        for (std::size_t i = 0; i < consecutive.size(); i += 2) {
            samples.push_back(consecutive[i] / repeat);
        }
        return samples;
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

void run_perf(const PerfContext& c, const PerfOptions& options, const SolutionLibrary* reference,
              SolutionSession* reference_session, const SolutionLibrary* candidate,
              SolutionSession* candidate_session) {
    const auto input_specs = c.problem->input_specs(c.config, c.rank);
    const auto output_specs = c.problem->output_specs(c.config, c.rank);
    const auto host_inputs = c.problem->build_inputs(c.config, c.rank);
    const DeviceVersions versions = c.device.versions();
    const std::size_t l2 = versions.l2_bytes;
    Timing timing(c);

    auto make_side = [&](const SolutionLibrary* library, SolutionSession* session,
                         const TimingBuffers& buffers) {
        std::vector<Context> contexts;
        for (int copy = 0; copy < buffers.copies(); ++copy) {
            contexts.push_back(session->make_context(c.local_rank, buffers.inputs(copy), buffers.outputs()));
        }
        return Side{library->side(), [library, session, contexts](int copy) {
                        if (library->call(contexts[static_cast<std::size_t>(copy)]) != 0) {
                            const std::string why = session->take_failure();
                            throw Error(library->side() + " failed while being timed: " +
                                        (why.empty() ? "non-zero return" : why));
                        }
                    }};
    };
    std::vector<std::pair<const SolutionLibrary*, SolutionSession*>> present;
    if (reference) {
        present.emplace_back(reference, reference_session);
    }
    if (candidate) {
        present.emplace_back(candidate, candidate_session);
    }

    const json start_clocks = timing.clocks();
    if (options.pkb) {
        const std::size_t first = input_specs.empty() ? 0 : spec_bytes(input_specs[0]);
        const int groups = pkb_groups(first, l2);
        TimingBuffers buffers(c.device, input_specs, host_inputs, output_specs, groups, true);
        for (auto [library, session] : present) {
            const Side side = make_side(library, session, buffers);
            const auto samples =
                timing.pkb_series(side, buffers.copies(), options.pkb_warmup, options.pkb_iterations);
            timing.send(
                "pkb", side.name, 0, samples,
                {{"num_input_groups", groups}, {"l2_cache_size_bytes", l2}, {"timed_tensor_bytes", first}});
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
        TimingBuffers buffers(c.device, input_specs, host_inputs, output_specs, copies, false);
        std::vector<Side> sides;
        for (auto [library, session] : present) {
            sides.push_back(make_side(library, session, buffers));
        }
        std::vector<int> repeat(sides.size(), 1);
        int next_copy = 0;
        for (std::size_t s = 0; s < sides.size(); ++s) {
            if (options.warmup > 0) {
                const auto warm = timing.pkbw_block(sides[s], copies, options.warmup, 1, false, next_copy);
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
            const auto samples =
                timing.pkbw_block(sides[s], copies, options.iterations, repeat[s], flush, next_copy);
            timing.send("pkbw", sides[s].name, static_cast<int>(b), samples,
                        {{"input_copies", copies},
                         {"copy_bytes", per_copy},
                         {"l2_cache_size_bytes", l2},
                         {"repeat", repeat[s]},
                         {"rotation", options.rotation}});
        }
        if (options.bare_nccl && !input_specs.empty() && !output_specs.empty()) {
            const WorkModel work = c.problem->work(c.config);
            const TensorSpec& in = input_specs[0];
            const Side bare{"bare_nccl", [&](int copy) {
                                c.device.bare_collective(
                                    work.collective, buffers.inputs(copy)[0].data, buffers.outputs()[0].data,
                                    static_cast<std::size_t>(shape_numel(in.shape)), in.dtype);
                            }};
            for (int w = 0; w < std::min(options.warmup, 20); ++w) {
                bare.call(w % copies);
            }
            for (int b = 0; b < options.pairs; ++b) {
                const auto samples = timing.pkbw_block(bare, copies, options.iterations, 1, flush, next_copy);
                timing.send(
                    "pkbw", "bare_nccl", b, samples,
                    {{"collective", collective_kind_name(work.collective)}, {"input_copies", copies}});
            }
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
            const Side side{std::string(collective_kind_name(kind)), [&](int) {
                                c.device.bare_collective(kind, input, output, per_rank, DType::BF16);
                            }};
            for (int w = 0; w < 5; ++w) {
                side.call(0);
            }
            int next = 0;
            const auto samples = timing.pkbw_block(side, 1, iterations, 1, false, next);
            timing.send("calibrate", side.name, static_cast<int>(index), samples, {{"bytes", bytes}});
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
            const Side side{"peer_copy", [&](int) { c.device.copy_async(local, peer, bytes); }};
            side.call(0);
            int next = 0;
            const auto samples = timing.pkbw_block(side, 1, iterations, 1, false, next);
            timing.send("calibrate", "peer_copy", static_cast<int>(index), samples, {{"bytes", bytes}});
            c.device.synchronize();
            c.rendezvous.barrier();
            c.device.release(local);
        }
    }
}

} // namespace pkbw::engine
