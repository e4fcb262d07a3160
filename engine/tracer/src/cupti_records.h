// CUPTI activity records -> pkbw trace events. No CUPTI calls here (only its record layouts), so the
// conversion is unit-tested on hand-made records without a GPU.
#pragma once

#include "pkbw/core/trace.h"

#include <cstdint>
#include <cstdio>
#include <cupti_activity.h>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace pkbw::tracer {

struct NameRecord {
    std::string object; // "thread" or "stream"
    std::int64_t id = 0;
    std::string name;
};

// NVTX arrives as separate start, end and payload records sharing an id, possibly in different
// buffers; this pairs them. Thread-compatible (the caller holds the tracer's lock).
class NvtxJoiner {
public:
    void start(std::uint32_t id, std::string name, std::string domain, std::int64_t ns, std::int64_t thread);
    void end(std::uint32_t id, std::int64_t ns);
    void instant(std::uint32_t id, std::string name, std::string domain, std::int64_t ns,
                 std::int64_t thread);
    void data(std::uint32_t id, std::uint32_t category, nlohmann::json payload);
    // Closed ranges and marks with their payloads attached. `final` also returns ranges never closed
    // (end = start, payload.unterminated = true) and forgets payloads that matched nothing.
    std::vector<TraceEvent> take_ready(bool final);
    std::size_t open_ranges() const { return open_.size(); }

private:
    std::map<std::uint32_t, TraceEvent> open_;
    std::vector<std::pair<std::uint32_t, TraceEvent>> ready_;
    std::map<std::uint32_t, std::pair<std::uint32_t, nlohmann::json>> data_;
};

// Opens a rank's trace file for writing only where none exists (O_EXCL): a second process of the same
// rank that loads the tracer (a later launch's rank given the tracing variables) once truncated the
// traced pass's records to an empty file. nullptr (errno set) where the file exists or cannot be made.
std::FILE* open_new_trace_file(const std::string& path);

// abi::__cxa_demangle, or "" when `name` is not a mangled C++ name.
std::string demangle(const char* name);
std::string copy_kind_name(std::uint8_t kind);

// The name of a CUDA API call from its record's kind (RUNTIME or DRIVER) and callback id; the tracer
// asks CUPTI (cuptiGetCallbackName), a test gives its own.
using ApiNameLookup = std::function<std::string(CUpti_ActivityKind kind, std::uint32_t cbid)>;

// A CUDA API call's range (CUPTI_ACTIVITY_KIND_RUNTIME / DRIVER): an NVTX-like range of domain
// kCudaApiDomain and category "cuda_runtime" or "cuda_driver" on its thread, carrying the correlation
// id its kernels and copies carry (the workbench's "CUDA API" lane and launch -> kernel flows; the same
// categories as a torch profile's, docs/tracing.md).
inline constexpr const char* kCudaApiDomain = "cupti";

// Appends the record's event (kernels, copies, memsets, syncs, API calls) to `events`, its NVTX part to
// `nvtx`, or its name to `names`; other kinds are ignored. Without `api_name`, an API call is named
// by its callback id.
void convert_record(const CUpti_Activity* record, NvtxJoiner& nvtx, std::vector<TraceEvent>& events,
                    std::vector<NameRecord>& names, const ApiNameLookup& api_name = {});

} // namespace pkbw::tracer
