#include "pkbw/core/kineto.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

namespace pkbw {
namespace {

bool gpu_category(const std::string& category) {
    return category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset" ||
           category == "gpu_user_annotation";
}

// pid / tid are numbers in Kineto's GPU rows but text in some others ("Spans", "stream 7").
std::int64_t id_of(const nlohmann::json& value) {
    if (value.is_number_integer()) {
        return value.get<std::int64_t>();
    }
    if (value.is_string()) {
        const auto& s = value.get_ref<const std::string&>();
        if (!s.empty() && s.size() < 19 &&
            std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            return std::stoll(s);
        }
    }
    return -1;
}

std::int64_t micros_to_ns(const nlohmann::json& value, const std::string& where, const char* field) {
    if (!value.is_number()) {
        throw FormatError(where + ": '" + field + "' is missing or not a number");
    }
    const double us = value.get<double>();
    if (!std::isfinite(us) || std::fabs(us) > 9.0e12) { // ~104 days of microseconds past the base
        throw FormatError(where + ": '" + field + "' is out of range");
    }
    return std::llround(us * 1000.0);
}

} // namespace

bool KinetoEvent::on_gpu() const {
    return gpu_category(category);
}

KinetoTrace parse_kineto_trace(std::string_view text, const std::string& source, int rank) {
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw FormatError(source + ": not valid JSON: " + e.what());
    }
    // Kineto writes an object with "traceEvents"; torch's profiler without Kineto (Debian's torch 1.13,
    // the host backend's Python ranks) writes the bare array of chrome's "JSON Array Format".
    const bool bare_array = root.is_array();
    if (!bare_array &&
        (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array())) {
        throw FormatError(source + ": no 'traceEvents' array; not a PyTorch profiler chrome trace");
    }
    KinetoTrace trace;
    trace.rank = rank;
    trace.source = source;
    if (!bare_array && root.contains("baseTimeNanoseconds")) {
        if (!root["baseTimeNanoseconds"].is_number_integer()) {
            throw FormatError(source + ": 'baseTimeNanoseconds' is not an integer");
        }
        trace.base_time_ns = root["baseTimeNanoseconds"].get<std::int64_t>();
    }
    if (!bare_array && root.contains("deviceProperties")) {
        trace.device_properties = root["deviceProperties"];
    }
    const auto& events = bare_array ? root : root["traceEvents"];
    for (std::size_t i = 0; i < events.size(); ++i) {
        const auto& e = events[i];
        const std::string where = source + ": traceEvents[" + std::to_string(i) + "]";
        if (!e.is_object()) {
            throw FormatError(where + " is not an object");
        }
        const std::string ph = e.contains("ph") && e["ph"].is_string() ? e["ph"].get<std::string>() : "";
        const auto text_of = [&](const char* key) {
            return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : std::string();
        };
        if (ph == "M") {
            const std::string kind = text_of("name");
            const auto args = e.value("args", nlohmann::json::object());
            const std::string name = args.is_object() && args.contains("name") && args["name"].is_string()
                                         ? args["name"].get<std::string>()
                                         : std::string();
            const auto pid = std::to_string(id_of(e.value("pid", nlohmann::json())));
            if (kind == "process_name") {
                trace.names["process:" + pid] = name;
            } else if (kind == "thread_name") {
                trace.names["thread:" + pid + ":" + std::to_string(id_of(e.value("tid", nlohmann::json())))] =
                    name;
            }
            continue;
        }
        if (ph != "X") {
            ++trace.other_events;
            continue;
        }
        KinetoEvent ev;
        ev.name = text_of("name");
        ev.category = text_of("cat");
        const std::int64_t ts = micros_to_ns(e.value("ts", nlohmann::json()), where, "ts");
        const std::int64_t dur = micros_to_ns(e.value("dur", nlohmann::json(0)), where, "dur");
        if (dur < 0) {
            throw FormatError(where + ": negative 'dur'");
        }
        ev.start_ns = trace.base_time_ns + ts;
        ev.end_ns = ev.start_ns + dur;
        ev.pid = id_of(e.value("pid", nlohmann::json()));
        ev.tid = id_of(e.value("tid", nlohmann::json()));
        if (e.contains("args")) {
            if (!e["args"].is_object()) {
                throw FormatError(where + ": 'args' is not an object");
            }
            ev.args = e["args"];
        }
        const auto arg_id = [&](const char* key) {
            return ev.args.is_object() && ev.args.contains(key) ? id_of(ev.args[key]) : -1;
        };
        ev.correlation = arg_id("correlation");
        if (ev.on_gpu()) {
            const auto stream = arg_id("stream");
            ev.stream = stream >= 0 ? stream : ev.tid;
            const auto device = arg_id("device");
            ev.device = static_cast<int>(device >= 0 ? device : ev.pid);
        }
        trace.events.push_back(std::move(ev));
    }
    std::stable_sort(trace.events.begin(), trace.events.end(),
                     [](const KinetoEvent& a, const KinetoEvent& b) {
                         return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
                     });
    return trace;
}

KinetoTrace read_kineto_trace(const std::filesystem::path& path, int rank) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw FormatError(path.string() + ": cannot open");
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (rank < 0) {
        const std::string stem = path.stem().string();
        if (stem.starts_with("rank_") && stem.size() > 5 && stem.size() < 12 &&
            std::all_of(stem.begin() + 5, stem.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            rank = std::stoi(stem.substr(5));
        }
    }
    return parse_kineto_trace(text.str(), path.string(), rank);
}

std::vector<KinetoKernelTotal> kineto_kernel_totals(const KinetoTrace& trace) {
    std::map<std::string, KinetoKernelTotal> by_name;
    for (const auto& e : trace.events) {
        if (e.category != "kernel") {
            continue;
        }
        auto& total = by_name[e.name];
        total.name = e.name;
        ++total.count;
        total.total_ns += e.duration_ns();
    }
    std::vector<KinetoKernelTotal> out;
    for (auto& [name, total] : by_name) {
        out.push_back(std::move(total));
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.total_ns > b.total_ns; });
    return out;
}

namespace {

std::array<int, 3> dims(const nlohmann::json& args, const char* key) {
    std::array<int, 3> out{0, 0, 0};
    if (args.is_object() && args.contains(key) && args[key].is_array())
        for (std::size_t i = 0; i < 3 && i < args[key].size(); ++i)
            if (args[key][i].is_number_integer())
                out[i] = args[key][i].get<int>();
    return out;
}

std::int64_t number(const nlohmann::json& args, const char* key) {
    return args.is_object() && args.contains(key) && args[key].is_number() ? args[key].get<std::int64_t>()
                                                                           : 0;
}

} // namespace

void append_kineto_events(const KinetoTrace& trace, const std::string& side, int trial, RankTrace& out,
                          std::int64_t shift_ns) {
    if (trace.events.empty())
        return;
    std::int64_t begin = trace.events.front().start_ns + shift_ns, end = begin;
    for (const auto& e : trace.events) {
        TraceEvent t;
        t.name = e.name;
        t.start_ns = e.start_ns + shift_ns;
        t.end_ns = e.end_ns + shift_ns;
        begin = std::min(begin, t.start_ns);
        end = std::max(end, t.end_ns);
        t.stream = e.stream;
        t.device = e.device;
        t.correlation_id = std::max<std::int64_t>(e.correlation, 0);
        t.thread = std::max<std::int64_t>(e.tid, 0);
        if (e.category == "kernel") {
            t.kind = TraceEventKind::Kernel;
            t.grid = dims(e.args, "grid");
            t.block = dims(e.args, "block");
            t.registers = static_cast<int>(number(e.args, "registers per thread"));
            t.shared_memory = number(e.args, "shared memory");
        } else if (e.category == "gpu_memcpy" || e.category == "gpu_memset") {
            t.kind = e.category == "gpu_memcpy" ? TraceEventKind::Memcpy : TraceEventKind::Memset;
            t.bytes = number(e.args, "bytes");
        } else if (e.name.starts_with("ProfilerStep#") && e.category != "gpu_user_annotation") {
            // The step's CPU range is the iteration; Kineto's GPU copy of it (gpu_user_annotation, on
            // the stream) stays an NVTX range below, or every iteration would appear twice.
            const std::string step = e.name.substr(13);
            t.kind = TraceEventKind::EngineRange;
            t.name = side + "/" + step;
            t.category = "iteration";
            t.stream = -1;
            t.device = -1;
            t.payload = {{"side", side}, {"iteration", std::atoi(step.c_str())}};
        } else {
            t.kind = TraceEventKind::NvtxRange;
            t.domain = "torch";
            t.category = e.category;
            t.stream = -1;
        }
        out.events.push_back(std::move(t));
    }
    TraceEvent phase;
    phase.kind = TraceEventKind::EngineRange;
    phase.name = side;
    phase.category = "phase";
    phase.start_ns = begin;
    phase.end_ns = end;
    phase.payload = {{"side", side}, {"trial", trial}, {"source", "torch-profiler"}};
    if (shift_ns != 0) {
        phase.payload["clock_shift_ns"] = shift_ns;
    }
    out.events.push_back(std::move(phase));
    std::stable_sort(out.events.begin(), out.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
        return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.duration_ns() > b.duration_ns();
    });
    out.source = out.source.empty() ? "torch-profiler" : out.source;
}

namespace {

// The side's first and last instants over its profiles; {0, 0} for none with events.
std::pair<std::int64_t, std::int64_t> span_of(const std::vector<const SideProfile*>& profiles) {
    std::int64_t begin = 0, end = 0;
    bool any = false;
    for (const auto* p : profiles) {
        for (const auto& e : p->trace.events) {
            begin = any ? std::min(begin, e.start_ns) : e.start_ns;
            end = any ? std::max(end, e.end_ns) : e.end_ns;
            any = true;
        }
    }
    return {begin, end};
}

} // namespace

std::vector<RankTrace> profiles_end_to_end(const std::vector<SideProfile>& profiles) {
    std::vector<std::string> order; // reference first, then the sides as they come
    for (const std::string side : {"reference", "candidate"}) {
        if (std::any_of(profiles.begin(), profiles.end(),
                        [&](const SideProfile& p) { return p.side == side; }))
            order.push_back(side);
    }
    for (const auto& p : profiles) {
        if (std::find(order.begin(), order.end(), p.side) == order.end())
            order.push_back(p.side);
    }
    std::map<int, RankTrace> ranks;
    std::optional<std::int64_t> cursor; // where the next side begins: the first side keeps its clock
    for (const auto& side : order) {
        std::vector<const SideProfile*> mine;
        for (const auto& p : profiles) {
            if (p.side == side && !p.trace.events.empty())
                mine.push_back(&p);
        }
        if (mine.empty())
            continue;
        // One clock for the side's ranks when every profile carries Kineto's absolute base time (one
        // launch of one node); the legacy profiler's clock starts at each process's own profile.
        const bool shared_clock = std::all_of(
            mine.begin(), mine.end(), [](const SideProfile* p) { return p->trace.base_time_ns != 0; });
        const std::int64_t side_begin = span_of(mine).first;
        if (!cursor)
            cursor = side_begin;
        std::int64_t placed_end = *cursor;
        std::int64_t longest = 0;
        for (const auto* p : mine) {
            const auto [own_begin, own_end] = span_of({p});
            const std::int64_t begin = shared_clock ? side_begin : own_begin;
            const std::int64_t shift = *cursor - begin;
            RankTrace& rank = ranks[p->trace.rank];
            rank.rank = p->trace.rank;
            append_kineto_events(p->trace, p->side, p->trial, rank, shift);
            placed_end = std::max(placed_end, own_end + shift);
            longest = std::max(longest, own_end - own_begin);
        }
        // A gap that reads as one on the timeline: a fiftieth of the side, at least a microsecond.
        cursor = placed_end + std::max<std::int64_t>(1000, longest / 50);
    }
    std::vector<RankTrace> out;
    for (auto& [rank, trace] : ranks) {
        for (auto& e : trace.events) {
            if (e.kind == TraceEventKind::EngineRange && e.category == "phase")
                e.payload["placed"] = "end to end"; // what the timeline's header tells the user
        }
        out.push_back(std::move(trace));
    }
    return out;
}

bool profiles_placed_end_to_end(const std::vector<RankTrace>& traces) {
    for (const auto& t : traces) {
        for (const auto& e : t.events) {
            if (e.kind == TraceEventKind::EngineRange && e.category == "phase" && e.payload.is_object() &&
                e.payload.value("placed", "") == "end to end")
                return true;
        }
    }
    return false;
}

std::vector<RankTrace> load_profiler_directory(const std::filesystem::path& dir,
                                               std::vector<std::string>* skipped) {
    static const std::regex pattern(R"(rank_(\d+)\.([a-z]+)\.torch\.json)");
    std::vector<SideProfile> profiles;
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& folder : {dir, dir / "candidate"}) {
        if (!std::filesystem::is_directory(folder, ec))
            continue;
        for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
            const auto name = entry.path().filename().string();
            if (entry.is_regular_file() && std::regex_match(name, pattern))
                files.push_back(entry.path());
        }
        if (ec)
            throw Error(folder.string() + ": cannot list the profiler traces: " + ec.message());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
        std::smatch m;
        const auto name = file.filename().string();
        std::regex_match(name, m, pattern);
        SideProfile p;
        p.side = m[2].str();
        try {
            p.trace = read_kineto_trace(file, std::stoi(m[1].str()));
        } catch (const FormatError& e) {
            if (skipped == nullptr)
                throw;
            skipped->push_back(e.what());
            continue;
        }
        profiles.push_back(std::move(p));
    }
    return profiles_end_to_end(profiles);
}

} // namespace pkbw
