#include "cupti_records.h"

#include <cstdlib>
#include <cupti_metrics.h>
#include <cxxabi.h>

namespace pkbw::tracer {
namespace {

std::int64_t ns(uint64_t t) {
    return static_cast<std::int64_t>(t);
}

std::int64_t thread_of(CUpti_ActivityObjectKind kind, const CUpti_ActivityObjectKindId& id) {
    return kind == CUPTI_ACTIVITY_OBJECT_THREAD || kind == CUPTI_ACTIVITY_OBJECT_PROCESS ? id.pt.threadId : 0;
}

const char* sync_name(CUpti_ActivitySynchronizationType type) {
    switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
        return "cudaEventSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
        return "cudaStreamWaitEvent";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
        return "cudaStreamSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
        return "cudaDeviceSynchronize";
    default:
        return "synchronization";
    }
}

nlohmann::json payload_of(CUpti_MetricValueKind kind, const CUpti_MetricValue& value) {
    switch (kind) {
    case CUPTI_METRIC_VALUE_KIND_DOUBLE:
        return {{"value", value.metricValueDouble}};
    case CUPTI_METRIC_VALUE_KIND_UINT64:
        return {{"value", value.metricValueUint64}};
    case CUPTI_METRIC_VALUE_KIND_INT64:
        return {{"value", value.metricValueInt64}};
    case CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD:
        // Schema-based payloads (NCCL's) are not decoded by CUPTI's activity API.
        return {{"extended", true}};
    default:
        return nullptr;
    }
}

} // namespace

std::FILE* open_new_trace_file(const std::string& path) {
    return std::fopen(path.c_str(), "wbx");
}

std::string demangle(const char* name) {
    if (!name || name[0] != '_' || name[1] != 'Z') {
        return {};
    }
    int status = 0;
    char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string result = status == 0 && out ? out : "";
    std::free(out);
    return result;
}

std::string copy_kind_name(std::uint8_t kind) {
    static const char* const kNames[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                         "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    return kind < std::size(kNames) ? kNames[kind] : "unknown";
}

void NvtxJoiner::start(std::uint32_t id, std::string name, std::string domain, std::int64_t ns,
                       std::int64_t thread) {
    TraceEvent e;
    e.kind = TraceEventKind::NvtxRange;
    e.name = std::move(name);
    e.domain = std::move(domain);
    e.start_ns = e.end_ns = ns;
    e.thread = thread;
    open_[id] = std::move(e);
}

void NvtxJoiner::end(std::uint32_t id, std::int64_t ns) {
    auto it = open_.find(id);
    if (it == open_.end()) {
        return; // the start was before tracing began
    }
    it->second.end_ns = std::max(ns, it->second.start_ns);
    ready_.emplace_back(id, std::move(it->second));
    open_.erase(it);
}

void NvtxJoiner::instant(std::uint32_t id, std::string name, std::string domain, std::int64_t ns,
                         std::int64_t thread) {
    TraceEvent e;
    e.kind = TraceEventKind::NvtxMark;
    e.name = std::move(name);
    e.domain = std::move(domain);
    e.start_ns = e.end_ns = ns;
    e.thread = thread;
    ready_.emplace_back(id, std::move(e));
}

void NvtxJoiner::data(std::uint32_t id, std::uint32_t category, nlohmann::json payload) {
    data_[id] = {category, std::move(payload)};
}

std::vector<TraceEvent> NvtxJoiner::take_ready(bool final) {
    if (final) {
        for (auto& [id, e] : open_) {
            e.payload = {{"unterminated", true}};
            ready_.emplace_back(id, std::move(e));
        }
        open_.clear();
    }
    std::vector<TraceEvent> out;
    for (auto& [id, e] : ready_) {
        if (auto it = data_.find(id); it != data_.end()) {
            if (it->second.first != 0) {
                e.category = std::to_string(it->second.first);
            }
            if (!it->second.second.is_null()) {
                if (e.payload.is_object()) {
                    e.payload.update(it->second.second);
                } else {
                    e.payload = std::move(it->second.second);
                }
            }
            data_.erase(it);
        }
        out.push_back(std::move(e));
    }
    ready_.clear();
    if (final) {
        data_.clear();
    }
    return out;
}

namespace {

template <typename Record>
const Record& as(const CUpti_Activity* record) {
    return *reinterpret_cast<const Record*>(record);
}

// A GPU activity's common fields.
template <typename Record>
TraceEvent device_event(TraceEventKind kind, const Record& r) {
    TraceEvent e;
    e.kind = kind;
    e.start_ns = ns(r.start);
    e.end_ns = std::max(ns(r.end), e.start_ns);
    e.stream = r.streamId;
    e.device = static_cast<int>(r.deviceId);
    e.correlation_id = r.correlationId;
    return e;
}

TraceEvent api_event(const CUpti_ActivityAPI& a, const ApiNameLookup& api_name) {
    TraceEvent e;
    e.kind = TraceEventKind::NvtxRange;
    e.domain = kCudaApiDomain;
    e.category = a.kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "cuda_runtime" : "cuda_driver";
    e.name = api_name ? api_name(a.kind, a.cbid) : std::string();
    if (e.name.empty()) {
        e.name = e.category + " " + std::to_string(a.cbid);
    }
    e.start_ns = ns(a.start);
    e.end_ns = std::max(ns(a.end), e.start_ns);
    e.thread = a.threadId;
    e.correlation_id = a.correlationId;
    if (a.returnValue != 0) {
        e.payload = {{"return_value", a.returnValue}};
    }
    return e;
}

TraceEvent kernel_event(const CUpti_ActivityKernel10& k) {
    TraceEvent e = device_event(TraceEventKind::Kernel, k);
    e.name = k.name ? k.name : "<unnamed kernel>";
    e.demangled = demangle(k.name);
    e.grid = {k.gridX, k.gridY, k.gridZ};
    e.block = {k.blockX, k.blockY, k.blockZ};
    e.registers = k.registersPerThread;
    e.shared_memory = static_cast<std::int64_t>(k.staticSharedMemory) + k.dynamicSharedMemory;
    return e;
}

template <typename Copy>
TraceEvent copy_event(const Copy& m) {
    TraceEvent e = device_event(TraceEventKind::Memcpy, m);
    e.copy_kind = copy_kind_name(m.copyKind);
    e.name = "memcpy " + e.copy_kind;
    e.bytes = static_cast<std::int64_t>(m.bytes);
    return e;
}

TraceEvent sync_event(const CUpti_ActivitySynchronization2& s) {
    TraceEvent e;
    e.kind = TraceEventKind::Sync;
    e.name = sync_name(s.type);
    e.start_ns = ns(s.start);
    e.end_ns = std::max(ns(s.end), e.start_ns);
    e.stream =
        s.streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? std::int64_t{-1} : std::int64_t{s.streamId};
    e.correlation_id = s.correlationId;
    return e;
}

void add_marker(const CUpti_ActivityMarker2& m, NvtxJoiner& nvtx) {
    const std::string name = m.name ? m.name : "";
    const std::string domain = m.domain ? m.domain : "";
    const auto thread = thread_of(m.objectKind, m.objectId);
    if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
        nvtx.instant(m.id, name, domain, ns(m.timestamp), thread);
    } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        nvtx.start(m.id, name, domain, ns(m.timestamp), thread);
    } else if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        nvtx.end(m.id, ns(m.timestamp));
    }
}

void add_name(const CUpti_ActivityName& n, std::vector<NameRecord>& names) {
    if (!n.name) {
        return;
    }
    if (n.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
        names.push_back({"thread", n.objectId.pt.threadId, n.name});
    } else if (n.objectKind == CUPTI_ACTIVITY_OBJECT_STREAM) {
        names.push_back({"stream", n.objectId.dcs.streamId, n.name});
    }
}

} // namespace

void convert_record(const CUpti_Activity* record, NvtxJoiner& nvtx, std::vector<TraceEvent>& events,
                    std::vector<NameRecord>& names, const ApiNameLookup& api_name) {
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
        events.push_back(api_event(as<CUpti_ActivityAPI>(record), api_name));
        break;
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        events.push_back(kernel_event(as<CUpti_ActivityKernel10>(record)));
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        events.push_back(copy_event(as<CUpti_ActivityMemcpy6>(record)));
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const auto& m = as<CUpti_ActivityMemcpyPtoP4>(record);
        TraceEvent e = copy_event(m);
        e.src_device = static_cast<int>(m.srcDeviceId);
        e.dst_device = static_cast<int>(m.dstDeviceId);
        events.push_back(std::move(e));
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto& m = as<CUpti_ActivityMemset4>(record);
        TraceEvent e = device_event(TraceEventKind::Memset, m);
        e.name = "memset";
        e.bytes = static_cast<std::int64_t>(m.bytes);
        events.push_back(std::move(e));
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        events.push_back(sync_event(as<CUpti_ActivitySynchronization2>(record)));
        break;
    case CUPTI_ACTIVITY_KIND_MARKER:
        add_marker(as<CUpti_ActivityMarker2>(record), nvtx);
        break;
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
        const auto& d = as<CUpti_ActivityMarkerData2>(record);
        nvtx.data(d.id, d.category, payload_of(d.payloadKind, d.payload));
        break;
    }
    case CUPTI_ACTIVITY_KIND_NAME:
        add_name(as<CUpti_ActivityName>(record), names);
        break;
    default:
        break;
    }
}

} // namespace pkbw::tracer
