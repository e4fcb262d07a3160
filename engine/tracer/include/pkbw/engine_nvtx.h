// The rank's traced ranges: one RAII object records a host range (TraceRecorder, always) and an NVTX
// range in domain "pkbw" (cuda builds), so the engine's phases show in pkbw's own trace, in CUPTI's
// marker records and in external tools (nsys). docs/tracing.md, "Rank integration".
#pragma once

#include "pkbw/core/trace.h"
#include "pkbw/tracer_control.h"

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#if defined(PKBW_HAVE_CUDA) && __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define PKBW_ENGINE_NVTX 1
#endif

namespace pkbw::engine {

#ifdef PKBW_ENGINE_NVTX
namespace nvtx_detail {

inline nvtxDomainHandle_t domain() {
    static nvtxDomainHandle_t handle = nvtxDomainCreateA("pkbw");
    return handle;
}

// NVTX categories are numbers; name each category once so tools show "phase", "iteration", ...
inline uint32_t category_id(std::string_view category) {
    static std::mutex mutex;
    static std::map<std::string, uint32_t, std::less<>> ids;
    std::lock_guard lock(mutex);
    if (auto it = ids.find(category); it != ids.end()) {
        return it->second;
    }
    const auto id = static_cast<uint32_t>(ids.size() + 1);
    ids.emplace(std::string(category), id);
    nvtxDomainNameCategoryA(domain(), id, std::string(category).c_str());
    return id;
}

inline nvtxEventAttributes_t attributes(std::string_view category, const std::string& message) {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = category_id(category);
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = message.c_str();
    return a;
}

} // namespace nvtx_detail
#endif

// A traced range for the enclosing scope. `recorder` may be null (host trace off); NVTX is emitted on
// cuda builds either way (a no-op without a tool attached).
class NvtxScopedRange {
public:
    NvtxScopedRange(TraceRecorder* recorder, std::string_view category, std::string_view name,
                    nlohmann::json payload = nullptr)
        : scope_(recorder, category, name, std::move(payload)) {
#ifdef PKBW_ENGINE_NVTX
        const std::string message(name);
        const auto a = nvtx_detail::attributes(category, message);
        nvtxDomainRangePushEx(nvtx_detail::domain(), &a);
#endif
    }
    ~NvtxScopedRange() {
#ifdef PKBW_ENGINE_NVTX
        nvtxDomainRangePop(nvtx_detail::domain());
#endif
    }
    NvtxScopedRange(const NvtxScopedRange&) = delete;
    NvtxScopedRange& operator=(const NvtxScopedRange&) = delete;

private:
    TraceRecorder::Scope scope_;
};

// An instant in both the host trace and NVTX.
inline void trace_mark(TraceRecorder* recorder, std::string_view category, std::string_view name,
                       nlohmann::json payload = nullptr) {
    if (recorder) {
        recorder->mark(category, name, std::move(payload));
    }
#ifdef PKBW_ENGINE_NVTX
    const std::string message(name);
    const auto a = nvtx_detail::attributes(category, message);
    nvtxDomainMarkEx(nvtx_detail::domain(), &a);
#endif
}

} // namespace pkbw::engine
