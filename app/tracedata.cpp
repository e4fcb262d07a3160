#include "tracedata.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

namespace pkbw::app {

std::size_t TimelineData::event_count() const {
    std::size_t n = 0;
    for (const auto& l : lanes) {
        n += l.events.size();
    }
    return n;
}

std::pair<std::size_t, std::size_t> TimelineData::visible(const TimelineLane& lane, double t0,
                                                          double t1) const {
    auto by_start = [](const TimelineEvent& e, double t) { return e.start_us < t; };
    const auto first =
        std::lower_bound(lane.events.begin(), lane.events.end(), t0 - lane.max_duration_us, by_start);
    const auto last = std::lower_bound(first, lane.events.end(), t1, by_start);
    auto begin = first;
    while (begin != last && begin->start_us + begin->duration_us < t0) {
        ++begin;
    }
    return {static_cast<std::size_t>(begin - lane.events.begin()),
            static_cast<std::size_t>(last - lane.events.begin())};
}

namespace {

// Per side, the span of its traced iterations.
std::map<std::string, std::pair<double, double>> side_spans(const std::vector<IterationSpan>& iterations) {
    std::map<std::string, std::pair<double, double>> spans;
    for (const auto& it : iterations) {
        auto [at, fresh] = spans.try_emplace(it.side, it.start_us, it.end_us);
        if (!fresh) {
            at->second.first = std::min(at->second.first, it.start_us);
            at->second.second = std::max(at->second.second, it.end_us);
        }
    }
    return spans;
}

} // namespace

std::string TimelineData::focus_side() const {
    const auto spans = side_spans(iterations);
    if (spans.size() < 2 || !spans.count("candidate")) {
        return {};
    }
    double sides = 0, t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
    for (const auto& [side, span] : spans) {
        sides += span.second - span.first;
        t0 = std::min(t0, span.first);
        t1 = std::max(t1, span.second);
    }
    return t1 - t0 > 3 * sides ? "candidate" : "";
}

std::pair<double, double> TimelineData::focus() const {
    if (iterations.empty()) {
        return {begin_us, end_us};
    }
    const std::string side = focus_side();
    double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
    for (const auto& it : iterations) {
        if (side.empty() || it.side == side) {
            t0 = std::min(t0, it.start_us);
            t1 = std::max(t1, it.end_us);
        }
    }
    const double margin = (t1 - t0) * 0.02;
    return {t0 - margin, t1 + margin};
}

void TimelineData::finish() {
    std::stable_sort(lanes.begin(), lanes.end(), [](const TimelineLane& a, const TimelineLane& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.name < b.name;
    });
    begin_us = std::numeric_limits<double>::infinity();
    end_us = -begin_us;
    for (auto& lane : lanes) {
        // By start, the longer first on ties, so that an enclosing range precedes what it holds.
        std::sort(lane.events.begin(), lane.events.end(), [](const TimelineEvent& a, const TimelineEvent& b) {
            return a.start_us != b.start_us ? a.start_us < b.start_us : a.duration_us > b.duration_us;
        });
        lane.max_duration_us = 0;
        // Nesting: an event's depth is the number of earlier events of the lane still open at its
        // start (ranges nest; kernels of one stream never overlap, so they stay at depth 0).
        std::vector<double> open_ends;
        lane.depths = 1;
        for (auto& e : lane.events) {
            while (!open_ends.empty() && open_ends.back() <= e.start_us) {
                open_ends.pop_back();
            }
            e.depth = static_cast<std::uint16_t>(std::min<std::size_t>(open_ends.size(), 15));
            lane.depths = std::max(lane.depths, e.depth + 1);
            const double end = e.start_us + e.duration_us;
            // Keep the stack ordered by end (innermost on top); a range that outlives its parent
            // is placed below it anyway.
            open_ends.push_back(open_ends.empty() ? end : std::min(end, open_ends.back()));
        }
        for (const auto& e : lane.events) {
            lane.max_duration_us = std::max(lane.max_duration_us, e.duration_us);
            begin_us = std::min(begin_us, e.start_us);
            end_us = std::max(end_us, e.start_us + e.duration_us);
        }
    }
    if (begin_us > end_us) {
        begin_us = end_us = 0;
    }
    std::sort(iterations.begin(), iterations.end(),
              [](const IterationSpan& a, const IterationSpan& b) { return a.start_us < b.start_us; });
}

void append_chrome_trace(TimelineData& data, const std::filesystem::path& path, int rank) {
    std::ifstream in(path);
    if (!in) {
        throw Error(path.string() + ": cannot be opened");
    }
    const auto json = nlohmann::json::parse(in, nullptr, false);
    if (json.is_discarded()) {
        throw FormatError(path.string() + ": not valid JSON");
    }
    const nlohmann::json* events = &json;
    if (json.is_object()) {
        auto it = json.find("traceEvents");
        if (it == json.end() || !it->is_array()) {
            throw FormatError(path.string() + ": no 'traceEvents' array");
        }
        events = &*it;
    } else if (!json.is_array()) {
        throw FormatError(path.string() + ": a trace is a JSON array or an object with 'traceEvents'");
    }
    std::map<std::string, std::size_t> lane_index;
    std::map<std::string, std::uint32_t> name_index;
    for (std::size_t i = 0; i < data.names.size(); ++i) {
        name_index.emplace(data.names[i], static_cast<std::uint32_t>(i));
    }
    std::map<std::string, std::vector<std::pair<double, std::uint32_t>>> open; // B/E stacks per lane
    auto lane_for = [&](const nlohmann::json& e) -> TimelineLane& {
        std::string tid =
            e.contains("tid") ? (e["tid"].is_string() ? e["tid"].get<std::string>() : e["tid"].dump()) : "0";
        const std::string cat = e.value("cat", "");
        std::string name = (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") ? "stream " + tid
                           : cat == "gpu_user_annotation"                                  ? "NVTX " + tid
                                                                                           : "CPU " + tid;
        auto [it, inserted] = lane_index.try_emplace(name, data.lanes.size());
        if (inserted) {
            TimelineLane lane;
            lane.rank = rank;
            lane.name = name;
            data.lanes.push_back(std::move(lane));
        }
        return data.lanes[it->second];
    };
    auto intern = [&](const std::string& name) {
        auto [it, inserted] = name_index.try_emplace(name, static_cast<std::uint32_t>(data.names.size()));
        if (inserted) {
            data.names.push_back(name);
        }
        return it->second;
    };
    for (const auto& e : *events) {
        if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string() || !e.contains("ts") ||
            !e["ts"].is_number()) {
            continue;
        }
        const std::string ph = e["ph"].get<std::string>();
        const double ts = e["ts"].get<double>();
        const std::string name =
            e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "?";
        if (ph == "X") {
            const double dur = e.contains("dur") && e["dur"].is_number() ? e["dur"].get<double>() : 0;
            lane_for(e).events.push_back({ts, std::max(0.0, dur), intern(name)});
        } else if (ph == "B") {
            TimelineLane& lane = lane_for(e);
            open[lane.name].emplace_back(ts, intern(name));
        } else if (ph == "E") {
            TimelineLane& lane = lane_for(e);
            auto& stack = open[lane.name];
            if (!stack.empty()) {
                lane.events.push_back(
                    {stack.back().first, std::max(0.0, ts - stack.back().first), stack.back().second});
                stack.pop_back();
            }
        }
    }
    data.finish();
}

std::string iteration_side(const pkbw::TraceEvent& e) {
    if (e.payload.is_object() && e.payload.contains("side") && e.payload["side"].is_string()) {
        return e.payload["side"].get<std::string>();
    }
    const auto slash = e.name.find('/'); // "reference/3"
    return slash == std::string::npos ? std::string("?") : e.name.substr(0, slash);
}

std::string event_detail(const pkbw::TraceEvent& e) {
    std::string out;
    auto dims = [](const std::array<int, 3>& v) {
        return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + "]";
    };
    if (e.kind == TraceEventKind::Kernel && e.grid[0] > 0) {
        out = "grid " + dims(e.grid) + ", block " + dims(e.block) + ", " + std::to_string(e.registers) +
              " registers, " + std::to_string(e.shared_memory) + " B shared memory";
    } else if ((e.kind == TraceEventKind::Memcpy || e.kind == TraceEventKind::Memset) && e.bytes > 0) {
        out = (e.copy_kind.empty() ? std::string() : e.copy_kind + ", ") + std::to_string(e.bytes) + " B";
    }
    if (e.peer_memory) {
        out +=
            (out.empty() ? "" : ", ") + std::string("touches peer memory (given a pointer into another GPU's "
                                                    "memory at its launch)");
    }
    if (e.correlation_id != 0) {
        out += (out.empty() ? "" : ", ") + std::string("launch correlation id ") +
               std::to_string(e.correlation_id);
    }
    if (e.device >= 0 && is_gpu_activity(e.kind)) {
        out += (out.empty() ? "" : ", ") + std::string("device ") + std::to_string(e.device);
    }
    return out;
}

namespace {

std::string lowered(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

} // namespace

std::pair<double, double> TimelineData::span_of(const std::string& text, int rank, double t0,
                                                double t1) const {
    const std::string needle = lowered(text);
    std::vector<bool> match(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
        match[i] = !needle.empty() && lowered(names[i]).find(needle) != std::string::npos;
    }
    double first = 0, last = 0;
    bool any = false;
    for (const TimelineLane& lane : lanes) {
        if (rank >= 0 && lane.rank != rank) {
            continue;
        }
        for (const TimelineEvent& e : lane.events) {
            if (!match[e.name] || (t1 > t0 && (e.start_us < t0 || e.start_us >= t1))) {
                continue;
            }
            first = any ? std::min(first, e.start_us) : e.start_us;
            last = any ? std::max(last, e.start_us + e.duration_us) : e.start_us + e.duration_us;
            any = true;
        }
    }
    return any ? std::pair{first, last} : std::pair{0.0, 0.0};
}

std::size_t TimelineData::count_matching(const std::string& text) const {
    const std::string needle = lowered(text);
    std::size_t n = 0;
    for (const TimelineLane& lane : lanes) {
        for (const TimelineEvent& e : lane.events) {
            n += !needle.empty() && lowered(names[e.name]).find(needle) != std::string::npos ? 1 : 0;
        }
    }
    return n;
}

bool is_cuda_api_call(const pkbw::TraceEvent& e) {
    return e.domain == "cupti" && e.kind == TraceEventKind::NvtxRange &&
           (e.category == "cuda_runtime" || e.category == "cuda_driver");
}

std::string torch_track(const pkbw::TraceEvent& e) {
    if (e.domain != "torch" || (e.kind != TraceEventKind::NvtxRange && e.kind != TraceEventKind::NvtxMark)) {
        return {};
    }
    if (e.category == "cuda_runtime" || e.category == "cuda_driver") {
        return "CUDA runtime";
    }
    if (e.category == "gpu_user_annotation") {
        return "GPU annotation";
    }
    return "CPU";
}

std::vector<std::pair<std::size_t, std::size_t>> TimelineData::correlated(std::size_t lane,
                                                                          std::size_t event) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    if (lane >= lanes.size() || event >= lanes[lane].events.size()) {
        return out;
    }
    const std::int64_t id = lanes[lane].events[event].correlation;
    if (id == 0) {
        return out;
    }
    for (std::size_t li = 0; li < lanes.size(); ++li) {
        if (lanes[li].rank != lanes[lane].rank) {
            continue;
        }
        for (std::size_t i = 0; i < lanes[li].events.size(); ++i) {
            if (lanes[li].events[i].correlation == id && (li != lane || i != event)) {
                out.emplace_back(li, i);
            }
        }
    }
    return out;
}

TimelineData timeline_from_traces(const std::vector<RankTrace>& traces) {
    TimelineData d;
    std::map<std::string, std::uint32_t> name_index;
    for (const RankTrace& trace : traces) {
        std::map<std::string, std::size_t> lanes;
        for (const pkbw::TraceEvent& e : trace.events) {
            std::string lane_name;
            if (is_gpu_activity(e.kind)) {
                auto named = trace.names.find("stream:" + std::to_string(e.stream));
                lane_name = named != trace.names.end() ? named->second : "stream " + std::to_string(e.stream);
            } else if (is_cuda_api_call(e)) {
                lane_name = "CUDA API";
            } else if (const std::string track = torch_track(e); !track.empty()) {
                lane_name = "torch " + track; // host and device time apart, not one "NVTX torch" lane
            } else if (e.kind == TraceEventKind::NvtxRange || e.kind == TraceEventKind::NvtxMark) {
                lane_name = "NVTX " + (e.domain.empty() ? std::string("default") : e.domain);
            } else if (e.kind == TraceEventKind::EngineRange) {
                lane_name = "engine";
            } else {
                lane_name = "sync";
            }
            auto [it, inserted] = lanes.try_emplace(lane_name, d.lanes.size());
            if (inserted) {
                TimelineLane lane;
                lane.rank = trace.rank;
                lane.name = lane_name;
                d.lanes.push_back(std::move(lane));
            }
            auto [nit, fresh] =
                name_index.try_emplace(e.display_name(), static_cast<std::uint32_t>(d.names.size()));
            if (fresh) {
                d.names.push_back(e.display_name());
            }
            std::uint32_t detail = 0;
            if (std::string text = event_detail(e); !text.empty()) {
                detail = static_cast<std::uint32_t>(d.details.size());
                d.details.push_back(std::move(text));
            }
            d.lanes[it->second].events.push_back({static_cast<double>(e.start_ns) / 1e3,
                                                  static_cast<double>(e.duration_ns()) / 1e3, nit->second, 0,
                                                  detail, e.correlation_id});
            if (e.kind == TraceEventKind::EngineRange && e.category == "iteration") {
                d.iterations.push_back({trace.rank, iteration_side(e), static_cast<double>(e.start_ns) / 1e3,
                                        static_cast<double>(e.end_ns) / 1e3});
            }
        }
    }
    d.finish();
    return d;
}

TimelineData synthetic_trace(int ranks, int lanes_per_rank, int events_per_lane, std::uint64_t seed) {
    TimelineData d;
    d.names = {"ncclAllReduce", "gemm_kernel", "elementwise", "custom_allgather", "memcpy HtoD"};
    std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
    auto next = [&] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    for (int r = 0; r < ranks; ++r) {
        for (int l = 0; l < lanes_per_rank; ++l) {
            TimelineLane lane;
            lane.rank = r;
            lane.name = "stream " + std::to_string(7 + l);
            lane.events.reserve(static_cast<std::size_t>(events_per_lane));
            double t = static_cast<double>(next() % 100);
            for (int i = 0; i < events_per_lane; ++i) {
                const double dur = 1.0 + static_cast<double>(next() % 400) / 10.0;
                lane.events.push_back({t, dur, static_cast<std::uint32_t>(next() % d.names.size())});
                t += dur + static_cast<double>(next() % 50) / 10.0;
            }
            d.lanes.push_back(std::move(lane));
        }
    }
    d.finish();
    return d;
}

} // namespace pkbw::app
