#include "pkbw/core/kineto.h"

#include "pkbw/core/error.h"
#include "pkbw/core/untrusted_file.h"
#include "trace_files.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <regex>

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

// The args pkbw reads (parse_kineto_trace, append_kineto_events): the rest of a profiler's args is
// not kept, so that what one event holds stays small whatever the file says.
constexpr const char* kKeptArgs[] = {"correlation",          "stream",        "device", "grid", "block",
                                     "registers per thread", "shared memory", "bytes"};

bool small_value(const nlohmann::json& value) {
    if (value.is_number()) {
        return true;
    }
    if (value.is_string()) { // id_of takes numbers written as text
        return value.get_ref<const std::string&>().size() < 32;
    }
    return value.is_array() && value.size() <= 3 &&
           std::all_of(value.begin(), value.end(), [](const nlohmann::json& v) { return v.is_number(); });
}

nlohmann::json kept_args(const nlohmann::json& args) {
    nlohmann::json out = nlohmann::json::object();
    for (const char* key : kKeptArgs) {
        if (auto it = args.find(key); it != args.end() && small_value(*it)) {
            out[key] = *it;
        }
    }
    return out;
}

// One element of traceEvents into `trace`: "X" an event (its times without the base yet), "M" a
// process or thread name, any other phase counted.
void add_element(KinetoTrace& trace, const nlohmann::json& e, const std::string& where) {
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
        return;
    }
    if (ph != "X") {
        ++trace.other_events;
        return;
    }
    KinetoEvent ev;
    ev.name = text_of("name");
    ev.category = text_of("cat");
    const std::int64_t ts = micros_to_ns(e.value("ts", nlohmann::json()), where, "ts");
    const std::int64_t dur = micros_to_ns(e.value("dur", nlohmann::json(0)), where, "dur");
    if (dur < 0) {
        throw FormatError(where + ": negative 'dur'");
    }
    ev.start_ns = ts;
    ev.end_ns = ts + dur;
    ev.pid = id_of(e.value("pid", nlohmann::json()));
    ev.tid = id_of(e.value("tid", nlohmann::json()));
    if (e.contains("args")) {
        if (!e["args"].is_object()) {
            throw FormatError(where + ": 'args' is not an object");
        }
        ev.args = kept_args(e["args"]);
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

// Feeds the elements of traceEvents (or of a bare array) to add_element as the parser meets them and
// drops each from the tree, so that the parse holds one element at a time; counts JSON values so that
// neither an element nor the header kept beside the events grows past its cap.
class ElementCallback {
public:
    ElementCallback(KinetoTrace& trace, const std::string& source, std::size_t max_events)
        : trace_(trace)
        , source_(source)
        , max_events_(max_events) {}

    bool operator()(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using Event = nlohmann::json::parse_event_t;
        const bool opens =
            event == Event::object_start || event == Event::array_start || event == Event::value;
        if (depth == 0) {
            if (event == Event::array_start) {
                bare_array_ = in_events_ = true;
            }
            return true;
        }
        const int events_depth = bare_array_ ? 1 : 2;
        if (!bare_array_ && depth == 1) {
            if (event == Event::key) {
                const auto& key = parsed.get_ref<const std::string&>();
                if (key == "traceEvents" && seen_events_key_) {
                    throw FormatError(source_ + ": 'traceEvents' appears twice");
                }
                seen_events_key_ = seen_events_key_ || key == "traceEvents";
                awaiting_events_ = key == "traceEvents";
                in_events_ = false;
                // Kept: what the parse reads; the rest is counted as the header's but not stored.
                return key == "traceEvents" || key == "baseTimeNanoseconds" || key == "deviceProperties";
            }
            if (awaiting_events_) {
                in_events_ = event == Event::array_start; // anything else is refused after the parse
                awaiting_events_ = false;
            }
        }
        if (!in_events_ || depth < events_depth) {
            if (opens && ++header_values_ > kKinetoHeaderMaxValues) {
                throw FormatError(source_ + ": more than " + std::to_string(kKinetoHeaderMaxValues) +
                                  " JSON values outside traceEvents: not read");
            }
            return true;
        }
        if (depth == events_depth && opens) {
            if (index_ >= max_events_) {
                throw FormatError(source_ + ": more than " + std::to_string(max_events_) +
                                  " events: not read");
            }
            element_values_ = 0;
        }
        if (opens && ++element_values_ > kKinetoEventMaxValues) {
            throw FormatError(where() + " holds more than " + std::to_string(kKinetoEventMaxValues) +
                              " JSON values: not read");
        }
        const bool closes = event == Event::object_end || event == Event::array_end || event == Event::value;
        if (depth == events_depth && closes) {
            add_element(trace_, parsed, where());
            ++index_;
            return false; // taken: not kept in the tree
        }
        return true;
    }

private:
    std::string where() const { return source_ + ": traceEvents[" + std::to_string(index_) + "]"; }

    KinetoTrace& trace_;
    const std::string& source_;
    std::size_t max_events_;
    bool bare_array_ = false, in_events_ = false, awaiting_events_ = false, seen_events_key_ = false;
    std::size_t index_ = 0, element_values_ = 0, header_values_ = 0;
};

} // namespace

bool KinetoEvent::on_gpu() const {
    return gpu_category(category);
}

KinetoTrace parse_kineto_trace(std::string_view text, const std::string& source, int rank,
                               std::size_t max_events) {
    KinetoTrace trace;
    trace.rank = rank;
    trace.source = source;
    nlohmann::json root;
    try {
        ElementCallback callback(trace, source, max_events);
        root = nlohmann::json::parse(text, std::ref(callback));
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
    if (!bare_array && root.contains("baseTimeNanoseconds")) {
        const auto& base = root["baseTimeNanoseconds"];
        // Bounded so that base + ts (at most ~1e16 ns) cannot overflow.
        if (!base.is_number_integer() || base.get<std::int64_t>() < 0 ||
            base.get<std::int64_t>() > 4'000'000'000'000'000'000) {
            throw FormatError(source + ": 'baseTimeNanoseconds' is not an integer between 0 and 4e18");
        }
        trace.base_time_ns = base.get<std::int64_t>();
    }
    if (!bare_array && root.contains("deviceProperties")) {
        trace.device_properties = std::move(root["deviceProperties"]);
    }
    for (auto& e : trace.events) {
        e.start_ns += trace.base_time_ns;
        e.end_ns += trace.base_time_ns;
    }
    std::stable_sort(trace.events.begin(), trace.events.end(),
                     [](const KinetoEvent& a, const KinetoEvent& b) {
                         return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
                     });
    return trace;
}

KinetoTrace read_kineto_trace(const std::filesystem::path& path, int rank) {
    const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    const auto read = read_untrusted_file(folder, path.filename(), kProfilerTraceMaxBytes);
    if (!read.ok()) {
        throw FormatError(read.error);
    }
    if (rank < 0) {
        const std::string stem = path.stem().string();
        if (stem.starts_with("rank_") && stem.size() > 5 && stem.size() < 12 &&
            std::all_of(stem.begin() + 5, stem.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            rank = std::stoi(stem.substr(5));
        }
    }
    return parse_kineto_trace(read.bytes, path.string(), rank);
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
                                               std::vector<std::string>* skipped,
                                               CandidateTraceBudget* budget) {
    static const std::regex pattern(R"(rank_(\d{1,9})\.([a-z]{1,32})\.torch\.json)");
    CandidateTraceBudget own_budget;
    std::vector<SideProfile> profiles;
    detail::read_trace_files(
        dir, pattern, [](std::string_view) { return kProfilerTraceMaxBytes; }, skipped,
        budget ? *budget : own_budget,
        [&](const detail::TraceFileRef& file, std::string_view bytes, std::size_t max_events) {
            std::smatch m;
            std::regex_match(file.name, m, pattern);
            SideProfile p;
            p.side = m[2].str();
            p.trace = parse_kineto_trace(bytes, file.shown, std::stoi(m[1].str()), max_events);
            const std::size_t events = p.trace.events.size();
            profiles.push_back(std::move(p));
            return events;
        });
    return profiles_end_to_end(profiles);
}

} // namespace pkbw
