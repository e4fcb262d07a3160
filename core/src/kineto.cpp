#include "pkbw/core/kineto.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
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
    if (!root.is_object() || !root.contains("traceEvents") || !root["traceEvents"].is_array()) {
        throw FormatError(source + ": no 'traceEvents' array; not a PyTorch profiler chrome trace");
    }
    KinetoTrace trace;
    trace.rank = rank;
    trace.source = source;
    if (root.contains("baseTimeNanoseconds")) {
        if (!root["baseTimeNanoseconds"].is_number_integer()) {
            throw FormatError(source + ": 'baseTimeNanoseconds' is not an integer");
        }
        trace.base_time_ns = root["baseTimeNanoseconds"].get<std::int64_t>();
    }
    if (root.contains("deviceProperties")) {
        trace.device_properties = root["deviceProperties"];
    }
    const auto& events = root["traceEvents"];
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

void append_kineto_events(const KinetoTrace& trace, const std::string& side, int trial, RankTrace& out) {
    if (trace.events.empty())
        return;
    std::int64_t begin = trace.events.front().start_ns, end = begin;
    for (const auto& e : trace.events) {
        begin = std::min(begin, e.start_ns);
        end = std::max(end, e.end_ns);
        TraceEvent t;
        t.name = e.name;
        t.start_ns = e.start_ns;
        t.end_ns = e.end_ns;
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
        } else if (e.name.starts_with("ProfilerStep#")) {
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
    out.events.push_back(std::move(phase));
    std::stable_sort(out.events.begin(), out.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
        return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.duration_ns() > b.duration_ns();
    });
    out.source = out.source.empty() ? "torch-profiler" : out.source;
}

} // namespace pkbw
