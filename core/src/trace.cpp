#include "pkbw/core/trace.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <fstream>
#include <set>

namespace pkbw {
namespace {

using nlohmann::json;

constexpr std::pair<TraceEventKind, std::string_view> kKindNames[] = {
    {TraceEventKind::Kernel, "kernel"},
    {TraceEventKind::Memcpy, "memcpy"},
    {TraceEventKind::Memset, "memset"},
    {TraceEventKind::Sync, "sync"},
    {TraceEventKind::NvtxRange, "nvtx_range"},
    {TraceEventKind::NvtxMark, "nvtx_mark"},
    {TraceEventKind::EngineRange, "engine_range"},
};

const std::set<std::string> kEventKeys = {
    "kind",        "name",       "demangled",  "start_ns", "end_ns",    "stream",        "device",
    "correlation", "thread",     "grid",       "block",    "registers", "shared_memory", "bytes",
    "copy_kind",   "src_device", "dst_device", "domain",   "category",  "payload",       "peer_memory"};

[[noreturn]] void fail(const std::string& where, const std::string& what) {
    throw FormatError(where + ": " + what);
}

std::int64_t get_int(const json& object, const char* key, const std::string& where, std::int64_t fallback) {
    auto it = object.find(key);
    if (it == object.end()) {
        return fallback;
    }
    if (!it->is_number_integer()) {
        fail(where, std::string("field '") + key + "': expected an integer, got " + it->dump());
    }
    return it->get<std::int64_t>();
}

std::int64_t require_int(const json& object, const char* key, const std::string& where) {
    if (!object.contains(key)) {
        fail(where, std::string("missing field '") + key + "'");
    }
    return get_int(object, key, where, 0);
}

std::string get_string(const json& object, const char* key, const std::string& where) {
    auto it = object.find(key);
    if (it == object.end()) {
        return {};
    }
    if (!it->is_string()) {
        fail(where, std::string("field '") + key + "': expected a string, got " + it->dump());
    }
    return it->get<std::string>();
}

std::array<int, 3> get_dim3(const json& object, const char* key, const std::string& where) {
    auto it = object.find(key);
    if (it == object.end()) {
        return {0, 0, 0};
    }
    if (!it->is_array() || it->size() != 3) {
        fail(where, std::string("field '") + key + "': expected [x, y, z]");
    }
    std::array<int, 3> out{};
    for (std::size_t i = 0; i < 3; ++i) {
        if (!(*it)[i].is_number_integer() || (*it)[i].get<std::int64_t>() < 0) {
            fail(where, std::string("field '") + key + "': expected non-negative integers");
        }
        out[i] = (*it)[i].get<int>();
    }
    return out;
}

} // namespace

std::string_view to_string(TraceEventKind kind) {
    for (const auto& [k, name] : kKindNames) {
        if (k == kind) {
            return name;
        }
    }
    return "unknown";
}

TraceEventKind trace_event_kind_from_string(std::string_view text, const std::string& where) {
    for (const auto& [k, name] : kKindNames) {
        if (name == text) {
            return k;
        }
    }
    fail(where, "field 'kind': unknown event kind '" + std::string(text) + "'");
}

bool is_gpu_activity(TraceEventKind kind) {
    return kind == TraceEventKind::Kernel || kind == TraceEventKind::Memcpy || kind == TraceEventKind::Memset;
}

json trace_header_json(int rank, std::int64_t pid, std::string_view source) {
    return {{"format", kTraceFormatName},
            {"version", kTraceFormatVersion},
            {"rank", rank},
            {"pid", pid},
            {"source", source},
            {"clock", kTraceClock}};
}

json to_json(const TraceEvent& e) {
    json j = {{"kind", to_string(e.kind)}, {"name", e.name}, {"start_ns", e.start_ns}, {"end_ns", e.end_ns}};
    // Defaults are left out: a kernel line carries no copy fields and a host range no GPU fields.
    if (!e.demangled.empty())
        j["demangled"] = e.demangled;
    if (e.stream >= 0)
        j["stream"] = e.stream;
    if (e.device >= 0)
        j["device"] = e.device;
    if (e.correlation_id != 0)
        j["correlation"] = e.correlation_id;
    if (e.thread != 0)
        j["thread"] = e.thread;
    if (e.grid != std::array<int, 3>{0, 0, 0})
        j["grid"] = e.grid;
    if (e.block != std::array<int, 3>{0, 0, 0})
        j["block"] = e.block;
    if (e.registers != 0)
        j["registers"] = e.registers;
    if (e.shared_memory != 0)
        j["shared_memory"] = e.shared_memory;
    if (e.bytes != 0)
        j["bytes"] = e.bytes;
    if (!e.copy_kind.empty())
        j["copy_kind"] = e.copy_kind;
    if (e.src_device >= 0)
        j["src_device"] = e.src_device;
    if (e.dst_device >= 0)
        j["dst_device"] = e.dst_device;
    if (!e.domain.empty())
        j["domain"] = e.domain;
    if (!e.category.empty())
        j["category"] = e.category;
    if (!e.payload.is_null())
        j["payload"] = e.payload;
    if (e.peer_memory)
        j["peer_memory"] = true;
    return j;
}

TraceEvent trace_event_from_json(const json& j, const std::string& where) {
    if (!j.is_object()) {
        fail(where, "expected a JSON object");
    }
    for (const auto& [key, value] : j.items()) {
        if (!kEventKeys.count(key)) {
            fail(where, "unknown field '" + key + "'");
        }
    }
    if (!j.contains("kind") || !j["kind"].is_string()) {
        fail(where, "field 'kind': expected a string");
    }
    if (!j.contains("name") || !j["name"].is_string()) {
        fail(where, "field 'name': expected a string");
    }
    TraceEvent e;
    e.kind = trace_event_kind_from_string(j["kind"].get<std::string>(), where);
    e.name = j["name"].get<std::string>();
    e.demangled = get_string(j, "demangled", where);
    e.start_ns = require_int(j, "start_ns", where);
    e.end_ns = require_int(j, "end_ns", where);
    if (e.end_ns < e.start_ns) {
        fail(where, "field 'end_ns': " + std::to_string(e.end_ns) + " is before start_ns " +
                        std::to_string(e.start_ns));
    }
    e.stream = get_int(j, "stream", where, -1);
    e.device = static_cast<int>(get_int(j, "device", where, -1));
    e.correlation_id = get_int(j, "correlation", where, 0);
    e.thread = get_int(j, "thread", where, 0);
    e.grid = get_dim3(j, "grid", where);
    e.block = get_dim3(j, "block", where);
    e.registers = static_cast<int>(get_int(j, "registers", where, 0));
    e.shared_memory = get_int(j, "shared_memory", where, 0);
    e.bytes = get_int(j, "bytes", where, 0);
    if (e.bytes < 0) {
        fail(where, "field 'bytes': negative");
    }
    e.copy_kind = get_string(j, "copy_kind", where);
    e.src_device = static_cast<int>(get_int(j, "src_device", where, -1));
    e.dst_device = static_cast<int>(get_int(j, "dst_device", where, -1));
    e.domain = get_string(j, "domain", where);
    e.category = get_string(j, "category", where);
    if (auto it = j.find("payload"); it != j.end()) {
        e.payload = *it;
    }
    if (auto it = j.find("peer_memory"); it != j.end()) {
        if (!it->is_boolean()) {
            fail(where, "field 'peer_memory': expected true or false");
        }
        e.peer_memory = it->get<bool>();
    }
    return e;
}

void sort_events(std::vector<TraceEvent>& events) {
    // Longer first at equal starts so that an enclosing range precedes what it contains.
    std::stable_sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) {
        if (a.start_ns != b.start_ns)
            return a.start_ns < b.start_ns;
        return a.end_ns > b.end_ns;
    });
}

RankTrace parse_trace_text(std::string_view text, const std::string& file, std::size_t max_events) {
    RankTrace trace;
    bool have_header = false, have_end = false;
    std::size_t pos = 0, line_no = 0, records = 0; // records: events and name records, each kept
    while (pos < text.size()) {
        ++line_no;
        std::size_t nl = text.find('\n', pos);
        const bool last_cut = nl == std::string_view::npos;
        const std::string_view line = text.substr(pos, last_cut ? std::string_view::npos : nl - pos);
        pos = last_cut ? text.size() : nl + 1;
        const std::string where = file + ":" + std::to_string(line_no);
        // Bounded parsing: one line's JSON tree can take twenty times its text, and every line is kept.
        if (line.size() > kTraceLineMaxBytes) {
            fail(where, "a line of " + std::to_string(line.size()) + " bytes, over the cap of " +
                            std::to_string(kTraceLineMaxBytes) + ": not read");
        }
        if (line.empty()) {
            fail(where, "empty line");
        }
        if (have_end) {
            fail(where, "content after the end line");
        }
        json j;
        try {
            j = json::parse(line);
        } catch (const json::parse_error& error) {
            if (last_cut && have_header) {
                // The writer died mid-line: keep everything before it, say the trace is partial.
                trace.complete = false;
                break;
            }
            fail(where, std::string("invalid JSON: ") + error.what());
        }
        if (!j.is_object()) {
            fail(where, "expected a JSON object");
        }
        if (!have_header) {
            if (get_string(j, "format", where) != kTraceFormatName) {
                fail(where,
                     std::string("not a pkbw trace (field 'format' must be \"") + kTraceFormatName + "\")");
            }
            const auto version = require_int(j, "version", where);
            if (version != kTraceFormatVersion) {
                fail(where, "field 'version': unsupported version " + std::to_string(version));
            }
            const auto clock = get_string(j, "clock", where);
            if (clock != kTraceClock) {
                fail(where,
                     "field 'clock': expected \"" + std::string(kTraceClock) + "\", got \"" + clock + "\"");
            }
            trace.rank = static_cast<int>(require_int(j, "rank", where));
            if (trace.rank < 0) {
                fail(where, "field 'rank': negative");
            }
            trace.pid = get_int(j, "pid", where, 0);
            trace.source = get_string(j, "source", where);
            have_header = true;
            continue;
        }
        if (j.contains("end")) {
            const auto count = require_int(j, "events", where);
            if (count != static_cast<std::int64_t>(trace.events.size())) {
                fail(where, "field 'events': end line says " + std::to_string(count) + " events, file has " +
                                std::to_string(trace.events.size()));
            }
            const auto dropped = get_int(j, "dropped_records", where, 0);
            if (dropped < 0) {
                fail(where, "field 'dropped_records': negative");
            }
            trace.dropped_records += static_cast<std::uint64_t>(dropped);
            have_end = true;
            continue;
        }
        if (++records > max_events) {
            fail(where, "more than " + std::to_string(max_events) + " events: not read");
        }
        if (j.contains("meta")) {
            if (get_string(j, "meta", where) != "name") {
                fail(where, "field 'meta': unknown record '" + j["meta"].dump() + "'");
            }
            const auto object = get_string(j, "object", where);
            trace.names[object + ":" + std::to_string(require_int(j, "id", where))] =
                get_string(j, "name", where);
            continue;
        }
        trace.events.push_back(trace_event_from_json(j, where));
    }
    if (!have_header) {
        throw FormatError(file + ":1: missing header line");
    }
    if (!have_end) {
        trace.complete = false;
    }
    sort_events(trace.events);
    return trace;
}

void save_trace_file(const RankTrace& trace, const std::filesystem::path& path) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) {
        throw Error(path.string() + ": cannot write trace file");
    }
    out << trace_header_json(trace.rank, trace.pid, trace.source).dump() << '\n';
    for (const auto& [key, name] : trace.names) {
        const auto colon = key.find(':');
        out << json{{"meta", "name"},
                    {"object", key.substr(0, colon)},
                    {"id", std::stoll(key.substr(colon + 1))},
                    {"name", name}}
                   .dump()
            << '\n';
    }
    for (const auto& e : trace.events) {
        out << to_json(e).dump() << '\n';
    }
    out << json{{"end", true}, {"events", trace.events.size()}, {"dropped_records", trace.dropped_records}}
               .dump()
        << '\n';
    if (!out) {
        throw Error(path.string() + ": write failed");
    }
}

RankTrace merge_rank_traces(const std::vector<RankTrace>& parts) {
    RankTrace merged;
    if (parts.empty()) {
        return merged;
    }
    merged.rank = parts.front().rank;
    merged.pid = parts.front().pid;
    bool has_engine = false;
    for (const auto& part : parts) {
        if (part.rank != merged.rank) {
            throw Error("merge_rank_traces: rank " + std::to_string(part.rank) + " merged into rank " +
                        std::to_string(merged.rank));
        }
        for (const auto& e : part.events) {
            has_engine = has_engine || e.kind == TraceEventKind::EngineRange;
        }
    }
    for (const auto& part : parts) {
        merged.source += (merged.source.empty() ? "" : "+") + part.source;
        merged.dropped_records += part.dropped_records;
        merged.complete = merged.complete && part.complete;
        merged.names.insert(part.names.begin(), part.names.end());
        for (const auto& e : part.events) {
            const bool duplicate =
                has_engine && part.source != "engine" && e.domain == "pkbw" &&
                (e.kind == TraceEventKind::NvtxRange || e.kind == TraceEventKind::NvtxMark);
            if (!duplicate) {
                merged.events.push_back(e);
            }
        }
    }
    sort_events(merged.events);
    return merged;
}

} // namespace pkbw
