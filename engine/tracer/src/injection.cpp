// libpkbw_tracer.so: a CUPTI activity tracer the CUDA driver loads into a rank process through
// CUDA_INJECTION64_PATH (docs/tracing.md). It writes $PKBW_TRACE_DIR/rank_<RANK>.cupti.jsonl in core's
// trace format. Activity records (API calls among them) and never CUPTI_ACTIVITY_KIND_KERNEL, which
// serializes kernels; launch callbacks only in a process that maps a peer's memory, and only in the
// traced pass, to mark the kernels given a pointer into it (peer_params.h).
#include "cupti_records.h"
#include "peer_params.h"
#include "pkbw/core/trace.h"
#include "pkbw/tracer_control.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cupti.h>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace pkbw::tracer {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20; // 8 MiB: ~21k kernels + API records measured with 0 dropped
constexpr std::size_t kBufferAlign = 8;

struct State {
    std::mutex mutex;
    std::FILE* file = nullptr;
    std::string path;
    pid_t owner_pid = 0;
    std::uint64_t events = 0;
    std::uint64_t dropped = 0;
    std::int64_t clock_offset_ns = 0; // added to CUPTI times when the timestamp callback is unavailable
    bool finished = false;
    NvtxJoiner nvtx;
    // Peer memory (pkbw_tracer_note_peer_memory) and the traced launches given a pointer into it, by
    // correlation id, until their kernel records arrive.
    PeerRanges peers;
    // The launch callbacks' switch, apart from `mutex` (which CUPTI's buffer thread holds while it
    // writes a whole buffer): no CUPTI call is made while `mutex` is held.
    std::mutex callbacks_mutex;
    CUpti_SubscriberHandle subscriber = nullptr; // made at the first peer range
    bool recording = false;                      // the activity kinds are enabled
    // What the launch callback keeps, under a mutex of its own that is only ever held briefly: a
    // launch never waits for the buffer thread's file writes.
    std::mutex launch_mutex;
    std::set<std::uint32_t> peer_launches;
    std::map<std::string, std::optional<std::vector<bool>>> signatures; // kernel name -> pointer params
};

// Leaked on purpose: CUPTI's worker thread may deliver buffers while static destructors run.
State& state() {
    static State* s = new State;
    return *s;
}

std::int64_t monotonic_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

uint64_t CUPTIAPI timestamp_callback() {
    return static_cast<uint64_t>(monotonic_ns());
}

void report(const char* what, CUptiResult result) {
    const char* text = "?";
    cuptiGetResultString(result, &text);
    std::fprintf(stderr, "pkbw tracer: %s failed: %s\n", what, text);
}

bool call(const char* what, CUptiResult result) {
    if (result != CUPTI_SUCCESS) {
        report(what, result);
        return false;
    }
    return true;
}

void write_line_locked(State& s, const nlohmann::json& line) {
    if (!s.file || s.finished) {
        return;
    }
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
    std::fwrite(text.data(), 1, text.size(), s.file);
}

void write_event_locked(State& s, TraceEvent event) {
    if (!s.file || s.finished) {
        return; // after the end line (a CUPTI thread during teardown): nowhere valid to put it
    }
    event.start_ns += s.clock_offset_ns;
    event.end_ns += s.clock_offset_ns;
    write_line_locked(s, to_json(event));
    ++s.events;
}

// CUPTI's name of a runtime or driver API call ("cudaLaunchKernel_v7000"), "" when it has none.
std::string api_name(CUpti_ActivityKind kind, std::uint32_t cbid) {
    const char* name = nullptr;
    const CUpti_CallbackDomain domain =
        kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) {
        return {};
    }
    return name;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    // CUDA 13 requests buffers per thread: each request needs its own memory (gpu-facts §4.2).
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
    State& s = state();
    std::vector<TraceEvent> events;
    std::vector<NameRecord> names;
    CUpti_Activity* record = nullptr;
    {
        std::lock_guard lock(s.mutex);
        while (buffer && valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
            convert_record(record, s.nvtx, events, names, api_name);
        }
        for (const auto& n : names) {
            write_line_locked(s, {{"meta", "name"}, {"object", n.object}, {"id", n.id}, {"name", n.name}});
        }
        {
            std::lock_guard launches(s.launch_mutex); // after `mutex`; the launch callback takes it alone
            for (auto& e : events) {
                if (e.kind == TraceEventKind::Kernel && !s.peer_launches.empty() &&
                    s.peer_launches.erase(static_cast<std::uint32_t>(e.correlation_id)) > 0) {
                    e.peer_memory = true;
                }
            }
        }
        for (auto& e : events) {
            write_event_locked(s, std::move(e));
        }
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS) {
            s.dropped += dropped;
        }
    }
    std::free(buffer);
}

// The parameter array of a kernel launch's API call (runtime or driver), nullptr for other calls or a
// launch whose parameters are packed in `extra`. CUDA 13's compiled launches (__cudaLaunchKernel) take
// a kernel handle where cudaLaunchKernel takes the host-side launch function, with the same layout
// around it.
void* const* launch_arguments(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params) {
    if (params == nullptr) {
        return nullptr;
    }
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        switch (cbid) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
        case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
        case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
            return static_cast<const cudaLaunchKernel_v7000_params*>(params)->args;
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
            return static_cast<const cudaLaunchCooperativeKernel_v9000_params*>(params)->args;
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
            return static_cast<const cudaLaunchKernelExC_v11060_params*>(params)->args;
        default:
            return nullptr;
        }
    }
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
        return static_cast<const cuLaunchKernel_params*>(params)->kernelParams;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
        return static_cast<const cuLaunchCooperativeKernel_params*>(params)->kernelParams;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        return static_cast<const cuLaunchKernelEx_params*>(params)->kernelParams;
    default:
        return nullptr;
    }
}

constexpr std::pair<CUpti_CallbackDomain, CUpti_CallbackId> kLaunchCalls[] = {
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060},
    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz},
};

// At a traced launch's entry: whether the kernel is given a pointer into peer memory. Reads only the
// parameters its mangled name says are pointers (peer_params.h); a kernel without a signature in its
// name is left unmarked.
void CUPTIAPI on_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
    const auto* call = static_cast<const CUpti_CallbackData*>(data);
    if (call == nullptr || call->callbackSite != CUPTI_API_ENTER || call->symbolName == nullptr) {
        return;
    }
    void* const* args = launch_arguments(domain, cbid, call->functionParams);
    State& s = state();
    if (args == nullptr || s.peers.empty()) {
        return;
    }
    std::optional<std::vector<bool>> pointers;
    {
        std::lock_guard lock(s.launch_mutex);
        auto it = s.signatures.find(call->symbolName);
        if (it == s.signatures.end()) {
            it = s.signatures.emplace(call->symbolName, pointer_parameters(call->symbolName)).first;
        }
        pointers = it->second;
    }
    if (pointers && launch_touches_peer_memory(*pointers, args, s.peers)) {
        std::lock_guard lock(s.launch_mutex);
        s.peer_launches.insert(call->correlationId);
    }
}

// Switches the launch callbacks with the activity kinds: only in the traced pass, never while timing.
void set_launch_callbacks(State& s, bool enable) {
    if (s.subscriber == nullptr) {
        return;
    }
    for (const auto& [domain, cbid] : kLaunchCalls) {
        // A call this CUDA lacks is CUPTI_ERROR_INVALID_PARAMETER: the others still count.
        cuptiEnableCallback(enable ? 1 : 0, s.subscriber, domain, cbid);
    }
}

// Writes the NVTX events whose ranges closed since the last flush (their MARKER_DATA has arrived by
// then: all buffers were just delivered).
void write_ready_nvtx_locked(State& s, bool final) {
    for (auto& e : s.nvtx.take_ready(final)) {
        write_event_locked(s, std::move(e));
    }
    if (s.file) {
        std::fflush(s.file);
    }
}

void flush_all(bool final) {
    State& s = state();
    call("cuptiActivityFlushAll", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::lock_guard lock(s.mutex);
    write_ready_nvtx_locked(s, final);
    if (final && s.file && !s.finished) {
        write_line_locked(s, {{"end", true}, {"events", s.events}, {"dropped_records", s.dropped}});
        std::fclose(s.file);
        s.file = nullptr;
        s.finished = true;
    }
}

void at_exit() {
    // A forked child inherits this handler; flushing CUPTI there hangs (HPCToolkit#195).
    if (::getpid() != state().owner_pid) {
        return;
    }
    flush_all(true);
}

std::string env_or(const char* name, const std::string& fallback) {
    const char* value = std::getenv(name);
    return value && *value ? value : fallback;
}

} // namespace
} // namespace pkbw::tracer

using namespace pkbw::tracer;

// Enables (or disables) the activity kinds pkbw records; never KIND_KERNEL, which serialises kernels.
// Returns false when kernel records are unavailable.
static bool set_activity(bool enable) {
    const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2,
        CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
        CUPTI_ACTIVITY_KIND_MARKER,
        CUPTI_ACTIVITY_KIND_MARKER_DATA,
        CUPTI_ACTIVITY_KIND_NAME,
        // The API calls, for the launch -> kernel flows: recorded in the traced pass only, which is
        // never timed (docs/tracing.md).
        CUPTI_ACTIVITY_KIND_RUNTIME,
        CUPTI_ACTIVITY_KIND_DRIVER,
    };
    bool ok = true;
    {
        State& s = state();
        std::lock_guard lock(s.callbacks_mutex);
        s.recording = enable;
        set_launch_callbacks(s, enable);
    }
    for (auto kind : kinds) {
        const CUptiResult result = enable ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
        if (result != CUPTI_SUCCESS) {
            report(((enable ? "cuptiActivityEnable(" : "cuptiActivityDisable(") +
                    std::to_string(static_cast<int>(kind)) + ")")
                       .c_str(),
                   result);
            ok = ok && kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        }
    }
    return ok;
}

extern "C" {

// The path of the libcupti this library is bound to: what NVTX_INJECTION64_PATH must name so that
// NVTX markers reach this CUPTI and not a second copy (gpu-facts §4.3).
__attribute__((visibility("default"))) const char* pkbw_tracer_cupti_path(void) {
    static std::string path = [] {
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) && info.dli_fname) {
            return std::string(info.dli_fname);
        }
        return std::string();
    }();
    return path.c_str();
}

// Switches recording on or off (the traced pass of a pkbw rank). Returns 0 on success.
__attribute__((visibility("default"))) int pkbw_tracer_set_enabled(int enabled) {
    if (state().owner_pid != ::getpid()) {
        return -1;
    }
    const bool ok = set_activity(enabled != 0);
    if (!enabled) {
        flush_all(false);
    }
    return ok ? 0 : -1;
}

// Where another GPU's memory lies in this process (the rank runtime's symmetric allocations: a peer's
// buffer, the device tables of the peers' addresses). A traced launch given a pointer into one marks
// its kernel "peer_memory". The first call subscribes the launch callbacks (one CUPTI subscriber per
// process: only a process that maps a peer's memory takes it). Returns 0 on success.
__attribute__((visibility("default"))) int pkbw_tracer_note_peer_memory(const void* begin, size_t bytes) {
    State& s = state();
    if (s.owner_pid != ::getpid()) {
        return -1;
    }
    s.peers.add(reinterpret_cast<std::uint64_t>(begin), bytes);
    std::lock_guard lock(s.callbacks_mutex);
    if (s.subscriber == nullptr) {
        if (!call("cuptiSubscribe (peer memory)", cuptiSubscribe(&s.subscriber, on_launch, nullptr))) {
            s.subscriber = nullptr;
            return -1;
        }
        set_launch_callbacks(s, s.recording);
    }
    return 0;
}

// Delivers every record CUPTI holds (incomplete ones included) to the file. Returns 0 on success.
__attribute__((visibility("default"))) int pkbw_tracer_flush(void) {
    if (state().owner_pid != ::getpid()) {
        return -1;
    }
    flush_all(false);
    return 0;
}

// Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this library; must return 1.
__attribute__((visibility("default"))) int InitializeInjection(void) {
    State& s = state();
    {
        std::lock_guard lock(s.mutex);
        if (s.owner_pid == ::getpid()) {
            return 1; // already initialised in this process
        }
        s.owner_pid = ::getpid();
        const std::string dir = env_or(kTraceDirVariable, ".");
        const std::string rank = env_or("RANK", std::to_string(::getpid()));
        char* end = nullptr;
        const long rank_number = std::strtol(rank.c_str(), &end, 10);
        if (!end || *end || rank_number < 0) {
            std::fprintf(stderr, "pkbw tracer: RANK='%s' is not a rank; tracing off\n", rank.c_str());
            return 1;
        }
        s.path = dir + "/rank_" + std::to_string(rank_number) + ".cupti.jsonl";
        // Never over another process's trace: a second process of the same rank traces nothing instead,
        // and says so.
        s.file = pkbw::tracer::open_new_trace_file(s.path);
        if (!s.file) {
            std::fprintf(stderr, "pkbw tracer: cannot write %s: %s; tracing off\n", s.path.c_str(),
                         std::strerror(errno));
            return 1;
        }
        write_line_locked(s, pkbw::trace_header_json(static_cast<int>(rank_number), ::getpid(), "cupti"));
    }

    // One time base for every record and for the engine's host ranges; must precede the first enable.
    if (cuptiActivityRegisterTimestampCallback(&timestamp_callback) != CUPTI_SUCCESS) {
        uint64_t cupti_now = 0;
        cuptiGetTimestamp(&cupti_now);
        const auto offset = monotonic_ns() - static_cast<std::int64_t>(cupti_now);
        std::lock_guard lock(s.mutex);
        s.clock_offset_ns = offset;
    }
    // The NVTX loader reads this on the process's first NVTX call; set here for processes that make
    // that call after cuInit (launchers set it before exec: pkbw/tracer_control.h).
    if (!std::getenv("NVTX_INJECTION64_PATH") && *pkbw_tracer_cupti_path()) {
        ::setenv("NVTX_INJECTION64_PATH", pkbw_tracer_cupti_path(), 0);
    }
    bool ok = call("cuptiActivityRegisterCallbacks",
                   cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    // pkbw's launcher defers recording to the rank's traced pass (PKBW_TRACE_DEFERRED=1), so that the
    // timing that precedes it runs with no activity enabled; other processes are traced from the start.
    const char* deferred = std::getenv(kTraceDeferredVariable);
    if (!(deferred && *deferred == '1')) {
        ok = set_activity(true) && ok;
    }
    if (!ok) {
        std::fprintf(stderr, "pkbw tracer: kernel tracing unavailable; %s will have no GPU records\n",
                     s.path.c_str());
    }
    std::atexit(at_exit);
    return 1;
}

} // extern "C"
