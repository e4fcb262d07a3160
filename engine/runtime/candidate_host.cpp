#include "candidate_host.h"

#include "channel.h"
#include "device.h"
#include "pkbw/core/candidate_protocol.h"
#include "pkbw/core/error.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/status.h"
#include "pkbw/core/trace.h"
#include "pkbw/engine_nvtx.h"
#include "pkbw/tracer_control.h"
#include "rendezvous.h"
#include "solution_library.h"
#include "timing.h"

#include <chrono>
#include <cstdio>
#include <cxxabi.h>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <typeinfo>
#include <unistd.h>

namespace pkbw::engine {
namespace {

namespace cp = candidate_protocol;
using nlohmann::json;

// A set of tensor views over mapped buffers; the names live here.
struct ViewSet {
    std::vector<std::string> names;
    std::vector<TensorView> inputs, outputs;
    std::int64_t* output_lengths = nullptr; // the length slots, when an output is variable-length
};

std::string demangled(const char* name) {
    int status = 0;
    char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string result = status == 0 && text ? text : name;
    std::free(text);
    return result;
}

class CandidateHost {
public:
    explicit CandidateHost(Channel& channel)
        : channel_(channel) {}

    int run() {
        std::vector<int> fds;
        const auto setup = channel_.receive(&fds);
        if (!setup || setup->value("msg", "") != cp::kSetup) {
            return status::kExitInternal;
        }
        // A judge and a candidate process from different builds would misread each other's messages:
        // refused by name before anything is loaded.
        if (const int version = setup->value("version", 0); version != cp::kVersion) {
            reply_failure(cp::kReady, std::string(status::kKindEnvironment),
                          "pkbw-candidate speaks candidate protocol version " + std::to_string(cp::kVersion) +
                              ", its judge version " + std::to_string(version) +
                              ": the two programs are from different builds of pkbw (install them together)");
            return status::kExitEnvironment;
        }
        try {
            start(*setup);
        } catch (const DeviceError& error) {
            reply_failure(cp::kReady, error.kind(), error.what());
            return status::kExitEnvironment;
        } catch (const std::exception& error) {
            reply_failure(cp::kReady, std::string(status::kKindEnvironment), error.what());
            return status::kExitEnvironment;
        }
        const DeviceVersions v = device_->versions();
        channel_.send({{"msg", cp::kReady},
                       {"ok", true},
                       {"pid", static_cast<long long>(::getpid())},
                       {"device", v.device_name},
                       {"nccl_runtime", v.nccl_runtime}});
        while (true) {
            fds.clear();
            std::optional<json> request;
            try {
                request = channel_.receive(&fds);
            } catch (const std::exception& error) {
                reply_failure("?", std::string(cp::kFailProtocol), error.what());
                continue;
            }
            if (!request) {
                return status::kExitInternal; // the judge is gone
            }
            const std::string msg = request->value("msg", "");
            if (msg == cp::kQuit) {
                channel_.send({{"msg", msg}, {"ok", true}});
                return finish();
            }
            handle(msg, *request, fds);
        }
    }

private:
    void start(const json& setup) {
        rank_ = setup.at("rank").get<int>();
        local_rank_ = setup.value("local_rank", rank_);
        if (setup.value("spin", false)) {
            channel_.set_spin(kChannelSpinPolls);
        }
        side_ = "candidate";
        const RendezvousConfig rdzv = rendezvous_config_from_env();
        rendezvous_ = Rendezvous::join(rdzv);
        if (setup.value("backend", "host") == "cuda") {
            device_ = make_cuda_device(local_rank_, *rendezvous_);
        } else {
            device_ = make_host_device(rank_, setup.value("shm_prefix", "/pkbw-candidate"));
        }
        library_.emplace(setup.at("library").get<std::string>(), side_);
        std::map<std::string, double> params;
        if (setup.contains("params")) {
            params = setup["params"].get<std::map<std::string, double>>();
        }
        session_ = std::make_unique<SolutionSession>(side_, *device_, *rendezvous_, params);
        // Ready only once every peer of this group has joined and set up: a judge may freeze its worker
        // as soon as it answers (perf's later launches run no trial first), and a frozen rank 0 no longer
        // serves a peer still joining (its rendezvous threads freeze with it); that peer's judge then
        // waits for a "ready" that never comes.
        rendezvous_->barrier();
        if (setup.contains("trace_dir")) {
            const std::filesystem::path dir = setup["trace_dir"].get<std::string>();
            recorder_ = std::make_unique<TraceRecorder>(run_layout::engine_trace(dir, rank_), rank_);
        }
    }

    // Every candidate process reaches this barrier before any leaves, so no peer still reads memory
    // another one owns; then the trace is written out and the process ends without tearing down its
    // CUDA context and communicator one by one (the driver releases them with the process; the
    // judge waits for this exit, so a slow teardown would be the eval's time).
    int finish() {
        try {
            rendezvous_->barrier();
        } catch (...) {
        }
        tracer::flush_tracer();
        recorder_.reset();
        std::fflush(nullptr);
        ::_exit(status::kExitOk);
    }

    void reply_failure(std::string_view msg, std::string_view kind, const std::string& message) {
        channel_.send({{"msg", msg}, {"ok", false}, {"kind", kind}, {"message", message}});
    }

    // A device error leaves the CUDA context unusable: say so, and end the process.
    [[noreturn]] void device_failed(std::string_view msg, const DeviceError& error) {
        try {
            channel_.send({{"msg", msg},
                           {"ok", false},
                           {"kind", cp::kFailDevice},
                           {"device_kind", error.kind()},
                           {"message", error.what()}});
        } catch (...) {
        }
        ::_exit(status::kExitSolutionBroke);
    }

    void handle(const std::string& msg, const json& request, std::vector<int>& fds) {
        try {
            json reply = {{"msg", msg}, {"ok", true}};
            if (msg == cp::kMap) {
                map(request, fds);
            } else if (msg == cp::kUnmap) {
                for (int id : request.at("ids")) {
                    if (auto it = mapped_.find(id); it != mapped_.end()) {
                        device_->unmap_shared(it->second.first, it->second.second);
                        mapped_.erase(it);
                    }
                }
            } else if (msg == cp::kViews) {
                define_views(request);
            } else if (msg == cp::kCall) {
                call(request);
            } else if (msg == cp::kPkbSeries) {
                pkb_series(request, reply);
            } else if (msg == cp::kTimedCalls || msg == cp::kGraphCalls) {
                // The worker's own time of the request, received to answered (a diagnostic of where a
                // block's overhead lies; the judge never takes it as a time: it is the process's to forge).
                const auto received = std::chrono::steady_clock::now();
                msg == cp::kTimedCalls ? timed_calls(request, reply) : graph_calls(request, reply);
                reply["worker_ms"] =
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - received)
                        .count();
            } else if (msg == cp::kTrace) {
                traced(request);
            } else {
                reply_failure(msg, std::string(cp::kFailProtocol), "unknown request '" + msg + "'");
                return;
            }
            if (reply.value("ok", true)) {
                channel_.send(reply);
            }
        } catch (const DeviceError& error) {
            device_failed(msg, error);
        } catch (const std::bad_alloc&) {
            reply_failure(msg, std::string(cp::kFailSolution), out_of_memory_message());
        } catch (const CallFailed& failed) {
            reply_failure(msg, std::string(cp::kFailSolution), failed.what());
        } catch (const std::exception& error) {
            reply_failure(msg, std::string(cp::kFailException),
                          demangled(typeid(error).name()) + ": " + error.what());
        } catch (...) {
            reply_failure(msg, std::string(cp::kFailException), "an exception that is not a std::exception");
        }
        for (int fd : fds) {
            ::close(fd);
        }
        fds.clear();
    }

    // The solution returned non-zero (ctx.fail()): not an exception of the solution's own.
    struct CallFailed : std::runtime_error {
        using std::runtime_error::runtime_error;
    };

    void map(const json& request, std::vector<int>& fds) {
        std::size_t next_fd = 0;
        for (const auto& buffer : request.at("buffers")) {
            SharedHandle handle;
            if (buffer.contains("ipc")) {
                handle.ipc = hex_decode(buffer["ipc"].get<std::string>());
            } else {
                if (next_fd >= fds.size()) {
                    throw Error("map: fewer descriptors than buffers");
                }
                handle.fd = fds[next_fd++];
            }
            const std::size_t bytes = buffer.at("bytes").get<std::size_t>();
            mapped_[buffer.at("id").get<int>()] = {device_->map_shared(handle, bytes), bytes};
        }
    }

    static std::string hex_decode(const std::string& hex) {
        std::string bytes;
        for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
            bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
        }
        return bytes;
    }

    TensorView view_of(const json& tensor, ViewSet& set, std::size_t name_index) {
        TensorView view{};
        view.name = set.names[name_index].c_str();
        view.dtype = static_cast<DType>(tensor.at("dtype").get<int>());
        const auto shape = tensor.at("shape").get<std::vector<std::int64_t>>();
        if (shape.size() > static_cast<std::size_t>(kMaxDims)) {
            throw Error("views: too many dimensions");
        }
        view.ndim = static_cast<std::int32_t>(shape.size());
        std::int64_t stride = 1;
        for (int i = view.ndim - 1; i >= 0; --i) {
            view.shape[i] = shape[static_cast<std::size_t>(i)];
            view.strides[i] = stride;
            stride *= shape[static_cast<std::size_t>(i)];
        }
        const auto it = mapped_.find(tensor.at("buffer").get<int>());
        if (it == mapped_.end()) {
            throw Error("views: tensor '" + set.names[name_index] + "' is in a buffer that is not mapped");
        }
        const std::size_t offset = tensor.at("offset").get<std::size_t>();
        if (offset + view.nbytes() > std::max<std::size_t>(it->second.second, 1)) {
            throw Error("views: tensor '" + set.names[name_index] + "' lies outside its buffer");
        }
        view.data = static_cast<char*>(it->second.first) + offset;
        return view;
    }

    std::int64_t* length_slots(const json& lengths, std::size_t outputs) {
        const auto it = mapped_.find(lengths.at("buffer").get<int>());
        const std::size_t offset = lengths.at("offset").get<std::size_t>();
        if (it == mapped_.end() || offset + outputs * sizeof(std::int64_t) > it->second.second) {
            throw Error("views: the output length slots lie outside a mapped buffer");
        }
        return reinterpret_cast<std::int64_t*>(static_cast<char*>(it->second.first) + offset);
    }

    ViewSet build_views(const json& request) {
        ViewSet set;
        const json& inputs = request.at("inputs");
        const json& outputs = request.at("outputs");
        for (const auto* list : {&inputs, &outputs}) {
            for (const auto& tensor : *list) {
                set.names.push_back(tensor.at("name").get<std::string>());
            }
        }
        std::size_t index = 0;
        for (const auto& tensor : inputs) {
            set.inputs.push_back(view_of(tensor, set, index++));
        }
        for (const auto& tensor : outputs) {
            set.outputs.push_back(view_of(tensor, set, index++));
        }
        if (request.contains("lengths")) {
            set.output_lengths = length_slots(request.at("lengths"), set.outputs.size());
        }
        return set;
    }

    void define_views(const json& request) {
        auto set = std::make_unique<ViewSet>(build_views(request));
        view_sets_[request.at("id").get<int>()] = std::move(set);
    }

    const ViewSet& view_set(int id) const {
        const auto it = view_sets_.find(id);
        if (it == view_sets_.end()) {
            throw Error("no view set " + std::to_string(id));
        }
        return *it->second;
    }

    void set_params(const json& request) {
        if (request.contains("params")) {
            session_->set_params(request["params"].get<std::map<std::string, double>>());
        }
    }

    void invoke(const Context& context) {
        if (const int code = library_->call(context); code != 0) {
            const std::string why = session_->take_failure();
            throw CallFailed(why.empty() ? side_ + " returned " + std::to_string(code) : why);
        }
    }

    void call(const json& request) {
        set_params(request);
        const ViewSet set = build_views(request);
        const Context context =
            session_->make_context(local_rank_, set.inputs, set.outputs, set.output_lengths);
        invoke(context);
        device_->synchronize();
    }

    std::vector<Context> contexts_of(const json& request) {
        std::vector<Context> contexts;
        for (int id : request.at("views")) {
            const ViewSet& set = view_set(id);
            contexts.push_back(
                session_->make_context(local_rank_, set.inputs, set.outputs, set.output_lengths));
        }
        return contexts;
    }

    // PKB's protocol (the PKB-compatible figure), measured here as PKB measures it.
    void pkb_series(const json& request, json& reply) {
        set_params(request);
        const std::vector<Context> contexts = contexts_of(request);
        if (contexts.empty()) {
            throw Error("a timed series needs at least one view set");
        }
        const CallFunction call = [&](int copy) { invoke(contexts[static_cast<std::size_t>(copy)]); };
        TimedCalls timed(*device_, *rendezvous_);
        const BlockTiming timing =
            timed.pkb_series(call, static_cast<int>(contexts.size()), request.at("warmup").get<int>(),
                             request.at("iterations").get<int>());
        reply["samples_ms"] = timing.samples_ms;
        reply["span_ms"] = timing.span_ms;
        reply["calls"] = timing.calls;
    }

    // One of pkbw's checked blocks: call k on view set k. The judge times the request; what this
    // process measures (samples, span) shows the distribution and is checked against that clock.
    void timed_calls(const json& request, json& reply) {
        set_params(request);
        const std::vector<Context> contexts = contexts_of(request);
        const CallFunction call = [&](int k) { invoke(contexts[static_cast<std::size_t>(k)]); };
        TimedCalls timed(*device_, *rendezvous_);
        const BlockTiming timing =
            timed.checked_block(call, static_cast<int>(contexts.size()), request.value("barrier", true));
        reply["samples_ms"] = timing.samples_ms;
        reply["span_ms"] = timing.span_ms;
        reply["enqueue_ms"] = timing.enqueue_ms;
        reply["host_ms"] = timing.host_ms;
        reply["calls"] = timing.calls;
    }

    // The block replayed from its CUDA graph, captured on the first request for these views and params
    // (a call's host code runs only then). A capture that fails is answered, and remembered, as no
    // figure: the launched blocks stand alone.
    void graph_calls(const json& request, json& reply) {
        set_params(request);
        const json key = {request.at("views"), request.value("params", json::object())};
        if (key != graph_key_) {
            graph_.reset();
            graph_error_.clear();
            graph_key_ = key;
            const std::vector<Context> contexts = contexts_of(request);
            device_->synchronize();
            try {
                graph_ = device_->capture([&] {
                    for (const Context& context : contexts) {
                        invoke(context);
                    }
                });
                if (!graph_) {
                    graph_error_ = "this backend has no CUDA graphs";
                }
            } catch (const DeviceError& error) {
                graph_error_ = error.what();
            }
        }
        if (!graph_) {
            reply["graph"] = false;
            reply["graph_error"] = graph_error_;
            return;
        }
        reply["graph"] = true;
        if (request.value("capture", false)) {
            return; // captured only: the judges agree that every rank can replay before any does
        }
        TimedCalls timed(*device_, *rendezvous_);
        const int calls = static_cast<int>(request.at("views").size());
        const BlockTiming timing = timed.graph_block(*graph_, calls, request.value("barrier", true));
        reply["samples_ms"] = json::array();
        reply["span_ms"] = timing.span_ms;
        reply["enqueue_ms"] = timing.enqueue_ms;
        reply["host_ms"] = timing.host_ms;
        reply["calls"] = timing.calls;
    }

    // The traced pass (--trace): ranges named as the judge names its own, so the trace reads the same.
    void traced(const json& request) {
        const ViewSet& set = view_set(request.at("views").get<int>());
        const Context context =
            session_->make_context(local_rank_, set.inputs, set.outputs, set.output_lengths);
        tracer::set_tracing_enabled(true);
        const int iterations = request.at("iterations").get<int>();
        {
            // As the judge's side: one call first, outside the iterations (one-time costs).
            NvtxScopedRange range(recorder_.get(), "warmup", side_ + "/warmup", {{"side", side_}});
            invoke(context);
            device_->synchronize();
        }
        for (int i = 0; i < iterations; ++i) {
            rendezvous_->barrier();
            NvtxScopedRange range(recorder_.get(), "iteration", side_ + "/" + std::to_string(i),
                                  {{"iteration", i}, {"side", side_}});
            invoke(context);
            device_->synchronize();
        }
        tracer::set_tracing_enabled(false);
        tracer::flush_tracer();
    }

    Channel& channel_;
    int rank_ = 0;
    int local_rank_ = 0;
    std::string side_;
    std::unique_ptr<Rendezvous> rendezvous_;
    std::unique_ptr<Device> device_;
    std::optional<SolutionLibrary> library_;
    std::unique_ptr<SolutionSession> session_;
    std::unique_ptr<TraceRecorder> recorder_;
    std::map<int, std::pair<void*, std::size_t>> mapped_;
    std::map<int, std::unique_ptr<ViewSet>> view_sets_;
    // The graph of graph_calls, the views and params it was captured for, or why it could not be.
    std::unique_ptr<CapturedCalls> graph_;
    json graph_key_;
    std::string graph_error_;
};

} // namespace

int serve_candidate(Channel& channel) {
    CandidateHost host(channel);
    return host.run();
}

} // namespace pkbw::engine
