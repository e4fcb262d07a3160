// libpkbw_tracer.so: a CUPTI activity tracer the CUDA driver loads into a rank process through
// CUDA_INJECTION64_PATH (docs/tracing.md). It writes $PKBW_TRACE_DIR/rank_<RANK>.cupti.jsonl in core's
// trace format. Activity records only (API calls among them, no callbacks) and never
// CUPTI_ACTIVITY_KIND_KERNEL, which serializes kernels.
#include "cupti_records.h"
#include "pkbw/core/trace.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cupti.h>
#include <dlfcn.h>
#include <map>
#include <mutex>
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
        const std::string dir = env_or("PKBW_TRACE_DIR", ".");
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
    const char* deferred = std::getenv("PKBW_TRACE_DEFERRED");
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
