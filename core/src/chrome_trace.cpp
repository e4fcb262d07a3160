#include "pkbw/core/chrome_trace.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>

namespace pkbw {
namespace {

using nlohmann::json;

// A track groups events that belong on one thread row; lanes split it where slices would overlap.
struct TrackKey {
    int order = 0; // engine, NVTX, sync, then GPU streams
    std::int64_t a = 0, b = 0;
    auto operator<=>(const TrackKey&) const = default;
};

TrackKey track_of(const TraceEvent& e) {
    switch (e.kind) {
    case TraceEventKind::EngineRange:
        return {0, 0, 0};
    case TraceEventKind::NvtxRange:
    case TraceEventKind::NvtxMark:
        // The recorder's own marks sit with its ranges; other NVTX events per host thread.
        return e.domain == "pkbw" && e.kind == TraceEventKind::NvtxMark ? TrackKey{0, 0, 0}
                                                                        : TrackKey{1, e.thread, 0};
    case TraceEventKind::Sync:
        return {2, 0, 0};
    default:
        return {3, e.device, e.stream};
    }
}

std::string track_name(const TrackKey& key, const RankTrace& trace) {
    switch (key.order) {
    case 0:
        return "engine";
    case 1: {
        auto it = trace.names.find("thread:" + std::to_string(key.a));
        return "nvtx thread " + (it != trace.names.end() ? it->second : std::to_string(key.a));
    }
    case 2:
        return "synchronization";
    default: {
        auto it = trace.names.find("stream:" + std::to_string(key.b));
        const std::string stream = it != trace.names.end() ? it->second : std::to_string(key.b);
        return "stream " + stream + (key.a >= 0 ? " (device " + std::to_string(key.a) + ")" : "");
    }
    }
}

json event_args(const TraceEvent& e) {
    json args = json::object();
    if (e.kind == TraceEventKind::Kernel) {
        if (!e.demangled.empty())
            args["mangled"] = e.name;
        args["grid"] = e.grid;
        args["block"] = e.block;
        args["registers"] = e.registers;
        args["shared_memory"] = e.shared_memory;
        if (e.peer_memory)
            args["peer_memory"] = true; // given a pointer into another GPU's memory at its launch
    }
    if (e.kind == TraceEventKind::Memcpy || e.kind == TraceEventKind::Memset) {
        args["bytes"] = e.bytes;
        if (!e.copy_kind.empty())
            args["copy_kind"] = e.copy_kind;
        if (e.src_device >= 0)
            args["src_device"] = e.src_device;
        if (e.dst_device >= 0)
            args["dst_device"] = e.dst_device;
    }
    if (e.stream >= 0)
        args["stream"] = e.stream;
    if (e.device >= 0)
        args["device"] = e.device;
    if (e.correlation_id != 0)
        args["correlation"] = e.correlation_id;
    if (!e.domain.empty())
        args["domain"] = e.domain;
    if (!e.category.empty())
        args["category"] = e.category;
    if (!e.payload.is_null())
        args["payload"] = e.payload;
    args["start_ns"] = e.start_ns;
    args["duration_ns"] = e.duration_ns();
    return args;
}

json metadata(const char* name, int pid, std::int64_t tid, json args) {
    json m = {{"name", name}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
    if (tid >= 0) {
        m["tid"] = tid;
    }
    return m;
}

double to_us(std::int64_t ns) {
    return static_cast<double>(ns) / 1000.0;
}

void append_rank(const RankTrace& trace, std::int64_t origin, json& out) {
    const int pid = trace.rank;
    out.push_back(metadata("process_name", pid, -1, {{"name", "rank " + std::to_string(trace.rank)}}));
    out.push_back(metadata("process_sort_index", pid, -1, {{"sort_index", trace.rank}}));

    std::map<TrackKey, std::vector<const TraceEvent*>> tracks;
    for (const auto& e : trace.events) {
        tracks[track_of(e)].push_back(&e);
    }
    std::int64_t next_tid = 1;
    for (auto& [key, events] : tracks) {
        std::stable_sort(events.begin(), events.end(), [](const TraceEvent* a, const TraceEvent* b) {
            return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
        });
        // Each lane holds a stack of open slice ends; a slice goes to the first lane where it nests
        // inside the innermost open slice (or the lane is free), so no lane has partial overlaps.
        std::vector<std::vector<std::int64_t>> lanes;
        std::vector<std::pair<const TraceEvent*, std::size_t>> placed;
        for (const TraceEvent* e : events) {
            std::size_t lane = 0;
            if (e->kind != TraceEventKind::NvtxMark) {
                for (lane = 0; lane < lanes.size(); ++lane) {
                    auto& stack = lanes[lane];
                    while (!stack.empty() && stack.back() <= e->start_ns) {
                        stack.pop_back();
                    }
                    if (stack.empty() || stack.back() >= e->end_ns) {
                        break;
                    }
                }
                if (lane == lanes.size()) {
                    lanes.emplace_back();
                }
                lanes[lane].push_back(e->end_ns);
            }
            placed.emplace_back(e, lane);
        }
        const std::size_t lane_count = std::max<std::size_t>(lanes.size(), 1);
        const std::string base = track_name(key, trace);
        for (std::size_t lane = 0; lane < lane_count; ++lane) {
            const auto tid = next_tid + static_cast<std::int64_t>(lane);
            const std::string name = lane == 0 ? base : base + " #" + std::to_string(lane + 1);
            out.push_back(metadata("thread_name", pid, tid, {{"name", name}}));
            out.push_back(metadata("thread_sort_index", pid, tid, {{"sort_index", tid}}));
        }
        for (const auto& [e, lane] : placed) {
            const auto tid = next_tid + static_cast<std::int64_t>(lane);
            json j = {{"name", e->display_name()},
                      {"cat", e->category.empty() ? std::string(to_string(e->kind))
                                                  : std::string(to_string(e->kind)) + "," + e->category},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", to_us(e->start_ns - origin)},
                      {"args", event_args(*e)}};
            if (e->kind == TraceEventKind::NvtxMark) {
                j["ph"] = "i";
                j["s"] = "t";
            } else {
                j["ph"] = "X";
                j["dur"] = to_us(e->duration_ns());
            }
            out.push_back(std::move(j));
        }
        next_tid += static_cast<std::int64_t>(lane_count);
    }
}

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos) {
        return text;
    }
    std::string out = "\"";
    for (char c : text) {
        out += c;
        if (c == '"') {
            out += '"';
        }
    }
    return out + "\"";
}

void write_file(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
        throw Error(path.string() + ": cannot write export");
    }
}

} // namespace

json chrome_trace_json(const std::vector<RankTrace>& traces) {
    std::int64_t origin = std::numeric_limits<std::int64_t>::max();
    for (const auto& trace : traces) {
        for (const auto& e : trace.events) {
            origin = std::min(origin, e.start_ns);
        }
    }
    if (origin == std::numeric_limits<std::int64_t>::max()) {
        origin = 0;
    }
    json events = json::array();
    json dropped = json::object(), complete = json::object();
    for (const auto& trace : traces) {
        append_rank(trace, origin, events);
        dropped[std::to_string(trace.rank)] = trace.dropped_records;
        complete[std::to_string(trace.rank)] = trace.complete;
    }
    return {{"traceEvents", std::move(events)},
            {"displayTimeUnit", "ns"},
            {"otherData",
             {{"generator", "pkbw"},
              {"clock", kTraceClock},
              {"time_origin_ns", origin},
              {"dropped_records", std::move(dropped)},
              {"complete", std::move(complete)}}}};
}

void export_chrome_trace(const std::vector<RankTrace>& traces, const std::filesystem::path& path) {
    write_file(path, chrome_trace_json(traces).dump() + "\n");
}

std::string kernel_summary_csv(const std::vector<KernelStats>& stats) {
    std::string out = "name,count,total_ns,mean_ns,p95_ns,min_ns,max_ns\n";
    for (const auto& k : stats) {
        char mean[64];
        std::snprintf(mean, sizeof mean, "%.1f", k.mean_ns);
        out += csv_field(k.name) + "," + std::to_string(k.count) + "," + std::to_string(k.total_ns) + "," +
               mean + "," + std::to_string(k.p95_ns) + "," + std::to_string(k.min_ns) + "," +
               std::to_string(k.max_ns) + "\n";
    }
    return out;
}

void export_kernel_summary_csv(const std::vector<RankTrace>& traces, const std::filesystem::path& path) {
    write_file(path, kernel_summary_csv(kernel_summary(traces)));
}

} // namespace pkbw
