// Header-only control of the CUPTI tracer (libpkbw_tracer.so) for the launcher and the rank; nothing
// here links CUDA or CUPTI (docs/tracing.md, "Running with the tracer").
#pragma once

#include <cstddef>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <utility>
#include <vector>

namespace pkbw::tracer {

// The tracer's variables: the library the driver injects, the folder its file goes to, and "1" where
// recording waits for the traced pass (pkbw_tracer_set_enabled).
inline constexpr const char* kTraceDirVariable = "PKBW_TRACE_DIR";
inline constexpr const char* kTraceDeferredVariable = "PKBW_TRACE_DEFERRED";

// Every variable tracing sets. A launcher removes them from children that are not ranks (compilers,
// nvidia-smi, helpers): CUDA_INJECTION64_PATH is inherited and would trace them too.
inline constexpr const char* kTracingVariables[] = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
                                                    kTraceDirVariable, kTraceDeferredVariable};

// The environment a launcher adds for a traced rank (RANK is already set per rank).
inline std::vector<std::pair<std::string, std::string>> tracing_environment(const std::string& tracer_library,
                                                                            const std::string& trace_dir) {
    return {{"CUDA_INJECTION64_PATH", tracer_library},
            {kTraceDirVariable, trace_dir},
            {kTraceDeferredVariable, "1"}};
}

// In a traced rank, before its first NVTX call: loads the tracer named by CUDA_INJECTION64_PATH
// (the driver later gets the same loaded copy) and points NVTX_INJECTION64_PATH at the libcupti it is
// bound to, so NVTX reaches that CUPTI and not a second copy (gpu-facts §4.3). Returns that path, or
// "" when not tracing or already set. Safe to call when tracing is off.
inline std::string prepare_nvtx_injection() {
    const char* tracer = std::getenv("CUDA_INJECTION64_PATH");
    if (!tracer || !*tracer || std::getenv("NVTX_INJECTION64_PATH")) {
        return {};
    }
    void* handle = ::dlopen(tracer, RTLD_NOW | RTLD_LOCAL); // kept open: the driver will use it
    if (!handle) {
        return {};
    }
    using PathFn = const char* (*)();
    auto fn = reinterpret_cast<PathFn>(::dlsym(handle, "pkbw_tracer_cupti_path"));
    const std::string path = fn && fn() ? fn() : "";
    if (!path.empty()) {
        ::setenv("NVTX_INJECTION64_PATH", path.c_str(), 1);
    }
    return path;
}

// Calls `name`, an entry point of the tracer already loaded in this process (CUDA_INJECTION64_PATH,
// looked up without loading it), with `args`; true when it returned 0. False when no tracer is loaded
// or it lacks the entry point.
template <typename... Args>
inline bool call_loaded_tracer(const char* name, Args... args) {
    const char* tracer = std::getenv("CUDA_INJECTION64_PATH");
    if (!tracer || !*tracer) {
        return false;
    }
    void* handle = ::dlopen(tracer, RTLD_NOW | RTLD_NOLOAD);
    if (!handle) {
        return false;
    }
    using EntryFn = int (*)(Args...);
    auto fn = reinterpret_cast<EntryFn>(::dlsym(handle, name));
    const bool ok = fn && fn(args...) == 0;
    ::dlclose(handle); // drops only the reference RTLD_NOLOAD took
    return ok;
}

// Asks a loaded tracer to deliver every CUPTI record to its file now (after each phase, so a crash
// later loses nothing before). Returns false when no tracer is loaded in this process.
inline bool flush_tracer() {
    return call_loaded_tracer("pkbw_tracer_flush");
}

// Switches a loaded tracer's recording on or off (the tracer starts off under pkbw's launcher, which
// sets PKBW_TRACE_DEFERRED=1, so timing never runs with CUPTI activity enabled). Returns false when no
// tracer is loaded in this process.
inline bool set_tracing_enabled(bool enabled) {
    return call_loaded_tracer("pkbw_tracer_set_enabled", enabled ? 1 : 0);
}

// Tells a loaded tracer where another GPU's memory lies in this process (a peer's symmetric buffer,
// the device table of the peers' addresses): a traced launch given a pointer into it marks its kernel
// as touching peer memory (docs/tracing.md). Returns false when no tracer is loaded in this process.
inline bool note_peer_memory(const void* begin, std::size_t bytes) {
    return call_loaded_tracer("pkbw_tracer_note_peer_memory", begin, bytes);
}

} // namespace pkbw::tracer
