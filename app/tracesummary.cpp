#include "tracesummary.h"

#include "pkbw/core/trace_analysis.h"
#include "tracedata.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

namespace pkbw::app {
namespace {

std::string kind_name(const TraceEvent& e) {
    if (is_cuda_api_call(e)) {
        return "cuda api";
    }
    // A torch-profiler event by its track: "cpu", "cuda runtime", "gpu annotation", not "nvtx".
    if (std::string track = torch_track(e); !track.empty()) {
        std::transform(track.begin(), track.end(), track.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        return track;
    }
    switch (e.kind) {
    case TraceEventKind::Kernel:
        return "kernel";
    case TraceEventKind::Memcpy:
        return "memcpy";
    case TraceEventKind::Memset:
        return "memset";
    default:
        return "nvtx";
    }
}

bool summarised(const TraceEvent& e) {
    if (is_gpu_activity(e.kind)) {
        return true;
    }
    return e.kind == TraceEventKind::NvtxRange && e.domain != "pkbw";
}

using Interval = std::pair<std::int64_t, std::int64_t>;

// The union of `spans` clipped to `w`, as sorted disjoint intervals.
std::vector<Interval> union_in(std::vector<Interval> spans, TimeWindow w) {
    std::vector<Interval> out;
    std::sort(spans.begin(), spans.end());
    for (auto [a, b] : spans) {
        a = std::max(a, w.start_ns);
        b = std::min(b, w.end_ns);
        if (b <= a) {
            continue;
        }
        if (!out.empty() && a <= out.back().second) {
            out.back().second = std::max(out.back().second, b);
        } else {
            out.emplace_back(a, b);
        }
    }
    return out;
}

std::int64_t length_of(const std::vector<Interval>& u) {
    std::int64_t n = 0;
    for (const auto& [a, b] : u) {
        n += b - a;
    }
    return n;
}

std::int64_t overlap_of(const std::vector<Interval>& x, const std::vector<Interval>& y) {
    std::int64_t n = 0;
    std::size_t i = 0, j = 0;
    while (i < x.size() && j < y.size()) {
        n += std::max<std::int64_t>(0, std::min(x[i].second, y[j].second) - std::max(x[i].first, y[j].first));
        (x[i].second < y[j].second ? i : j) += 1;
    }
    return n;
}

struct Breakdown {
    std::int64_t compute = 0, communication = 0, overlap = 0, idle = 0;
};

// HTA's breakdown of one window with pkbw's notion of communication (is_communication).
Breakdown breakdown(const RankTrace& trace, TimeWindow w, const std::set<std::string>& marked,
                    const std::set<std::int64_t>& nccl_issued) {
    std::vector<Interval> compute, comm, all;
    for (const TraceEvent& e : trace.events) {
        if (is_collective_annotation(e) && e.end_ns > w.start_ns && e.start_ns < w.end_ns) {
            comm.emplace_back(e.start_ns, e.end_ns); // its device work is the collective's, by any name
            continue;
        }
        if (!is_gpu_activity(e.kind) || e.end_ns <= w.start_ns || e.start_ns >= w.end_ns) {
            continue;
        }
        all.emplace_back(e.start_ns, e.end_ns);
        if (is_communication(e, marked, nccl_issued)) {
            comm.emplace_back(e.start_ns, e.end_ns);
        } else if (e.kind == TraceEventKind::Kernel) {
            compute.emplace_back(e.start_ns, e.end_ns);
        }
    }
    const auto u_compute = union_in(std::move(compute), w), u_comm = union_in(std::move(comm), w);
    Breakdown b;
    b.compute = length_of(u_compute);
    b.communication = length_of(u_comm);
    b.overlap = overlap_of(u_compute, u_comm);
    b.idle = std::max<std::int64_t>(0, w.length() - length_of(union_in(std::move(all), w)));
    return b;
}

bool contains_lower(const std::string& text, std::initializer_list<const char*> words) {
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return std::any_of(words.begin(), words.end(),
                       [&](const char* w) { return lower.find(w) != std::string::npos; });
}

} // namespace

std::string communication_reason(const TraceEvent& e, const std::set<std::string>& marked,
                                 const std::set<std::int64_t>& nccl_issued) {
    // Its span counts as communication in the overlap (breakdown), so its row says why as well.
    if (is_collective_annotation(e)) {
        return "collective (torch annotation)";
    }
    if (is_gpu_activity(e.kind) && e.correlation_id != 0 && nccl_issued.count(e.correlation_id)) {
        return "issued by NCCL";
    }
    if (e.kind == TraceEventKind::Memcpy && e.copy_kind == "PtoP") {
        return "peer copy";
    }
    if (e.kind != TraceEventKind::Kernel) {
        return "";
    }
    if (marked.count(e.display_name())) {
        return "marked by you";
    }
    if (is_nccl_kernel(e)) {
        return "NCCL";
    }
    if (e.peer_memory) {
        return "touches peer memory";
    }
    if (contains_lower(e.display_name(),
                       {"peer", "p2p", "ipc", "symmetric", "symm_mem", "multimem", "nvshmem", "allreduce",
                        "all_reduce", "allgather", "all_gather", "reduce_scatter", "reducescatter",
                        "alltoall", "all_to_all", "broadcast"})) {
        return "name";
    }
    return "";
}

bool is_collective_annotation(const TraceEvent& e) {
    return e.kind == TraceEventKind::NvtxRange && e.category == "gpu_user_annotation" &&
           e.name.starts_with("nccl:");
}

bool is_communication(const TraceEvent& event, const std::set<std::string>& marked,
                      const std::set<std::int64_t>& nccl_issued) {
    return !communication_reason(event, marked, nccl_issued).empty();
}

std::set<std::int64_t> nccl_issued_calls(const RankTrace& trace) {
    std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>> nccl_by_thread;
    for (const TraceEvent& e : trace.events) {
        if (e.kind == TraceEventKind::NvtxRange && e.domain == "NCCL" && e.thread != 0) {
            nccl_by_thread[e.thread].emplace_back(e.start_ns, e.end_ns);
        }
    }
    std::set<std::int64_t> issued;
    if (nccl_by_thread.empty()) {
        return issued;
    }
    for (const TraceEvent& e : trace.events) {
        if (!is_cuda_api_call(e) || e.correlation_id == 0) {
            continue;
        }
        const auto ranges = nccl_by_thread.find(e.thread);
        if (ranges == nccl_by_thread.end()) {
            continue;
        }
        for (const auto& [start, end] : ranges->second) {
            if (start <= e.start_ns && e.start_ns <= end) {
                issued.insert(e.correlation_id);
                break;
            }
        }
    }
    return issued;
}

namespace {

// One event total of the summary's rows, keyed by (side, rank, kind, name).
struct EventTotal {
    std::int64_t count = 0, total_ns = 0;
    std::string communication;
};
using EventTotals = std::map<std::tuple<std::string, int, std::string, std::string>, EventTotal>;

// A span of one rank's trace that the summary reads as one iteration of a side. `w`: the iteration
// clipped to the selection (its time, and the overlap's); `starts`: the whole iteration, since its
// events are those that start in it.
struct SideWindow {
    std::string side;
    TimeWindow w, starts;
    std::string iteration; // the iteration range's name ("" for phases and spans)
};

TimeWindow clipped(TimeWindow w, std::optional<std::pair<std::int64_t, std::int64_t>> window_ns) {
    if (window_ns) {
        w.start_ns = std::max(w.start_ns, window_ns->first);
        w.end_ns = std::min(w.end_ns, window_ns->second);
    }
    return w;
}

bool is_iteration(const TraceEvent& e) {
    return e.kind == TraceEventKind::EngineRange && e.category == "iteration";
}

// Where a trace has no iterations: each side's whole phase where the phase names its side, else the
// whole trace (none where sided phases exist but none is in the selection).
void add_phase_or_span_windows(const RankTrace& trace,
                               std::optional<std::pair<std::int64_t, std::int64_t>> window_ns,
                               std::vector<SideWindow>& windows) {
    bool sided_phase = false;
    for (const TraceEvent& e : trace.events) {
        if (e.kind != TraceEventKind::EngineRange || e.category != "phase" || !e.payload.is_object() ||
            !e.payload.contains("side") || !e.payload["side"].is_string()) {
            continue;
        }
        sided_phase = true;
        const TimeWindow w = clipped({e.start_ns, e.end_ns}, window_ns);
        if (w.end_ns > w.start_ns) {
            windows.push_back({e.payload["side"].get<std::string>(), w, {e.start_ns, e.end_ns}});
        }
    }
    if (windows.empty() && !sided_phase) {
        const TimeWindow w = clipped(trace_span(trace), window_ns);
        if (w.end_ns > w.start_ns) {
            windows.push_back({"trace", w, trace_span(trace)});
        }
    }
}

// The windows of a rank's trace, in time order: its iterations in the selection; without iterations,
// each side's whole phase where the phase names its side (import-pkb's torch-profiler profiles, which
// PKB's worker records without ProfilerStep#N steps); without either, the whole trace. None where
// iterations (or sided phases) exist but none is in the selection.
std::vector<SideWindow> side_windows(const RankTrace& trace,
                                     std::optional<std::pair<std::int64_t, std::int64_t>> window_ns) {
    std::vector<SideWindow> windows;
    for (const TraceEvent& e : trace.events) {
        const TimeWindow w = clipped({e.start_ns, e.end_ns}, window_ns);
        if (is_iteration(e) && (!window_ns || w.end_ns > w.start_ns)) {
            windows.push_back({iteration_side(e), w, {e.start_ns, e.end_ns}, e.name});
        }
    }
    if (windows.empty() && std::none_of(trace.events.begin(), trace.events.end(), is_iteration)) {
        add_phase_or_span_windows(trace, window_ns, windows);
    }
    std::sort(windows.begin(), windows.end(),
              [](const SideWindow& a, const SideWindow& b) { return a.w.start_ns < b.w.start_ns; });
    return windows;
}

// The events of one window into the totals. Events are sorted by start: the first one at or after the
// iteration's start. Without a selection an event counts at its full length (a kernel may outlast its
// host-side step); within a selection only its part inside the selection counts, whether it began
// before the selection or ends after it.
void count_events(const RankTrace& trace, const SideWindow& win,
                  std::optional<std::pair<std::int64_t, std::int64_t>> window_ns,
                  const std::set<std::string>& communication_marks, const std::set<std::int64_t>& issued,
                  EventTotals& totals) {
    auto first = std::lower_bound(trace.events.begin(), trace.events.end(), win.starts.start_ns,
                                  [](const TraceEvent& e, std::int64_t t) { return e.start_ns < t; });
    for (auto it = first; it != trace.events.end() && it->start_ns < win.w.end_ns; ++it) {
        if (!summarised(*it)) {
            continue;
        }
        std::int64_t counted = it->duration_ns();
        if (window_ns) {
            const std::int64_t from = std::max(it->start_ns, window_ns->first);
            const std::int64_t to = std::min(it->end_ns, window_ns->second);
            if (it->start_ns < window_ns->first && to <= from) {
                continue; // ended before the selection
            }
            counted = std::max<std::int64_t>(0, to - from);
        }
        EventTotal& a = totals[{win.side, trace.rank, kind_name(*it), it->display_name()}];
        a.count += 1;
        a.total_ns += counted;
        if (a.communication.empty()) {
            a.communication = communication_reason(*it, communication_marks, issued);
        }
    }
}

// One window's time into its side's and rank's overlap figures.
void add_window(SideOverlap& o, const SideWindow& win, const Breakdown& b) {
    o.iterations += 1;
    o.iteration_us += static_cast<double>(win.w.length()) / 1e3;
    o.compute_us += static_cast<double>(b.compute) / 1e3;
    o.communication_us += static_cast<double>(b.communication) / 1e3;
    o.overlap_us += static_cast<double>(b.overlap) / 1e3;
    o.idle_us += static_cast<double>(b.idle) / 1e3;
    o.busy_percent_by_iteration.push_back(100.0 * static_cast<double>(win.w.length() - b.idle) /
                                          static_cast<double>(win.w.length()));
}

// The summary from the totals: percentages, rows' means and shares of their iterations, and the order
// a reader expects: reference before candidate (as the trace runs them), then by rank, then the
// heaviest first.
TraceSummary summary_of(const EventTotals& totals,
                        std::map<std::pair<std::string, int>, SideOverlap>& overlaps) {
    TraceSummary s;
    for (auto& [key, o] : overlaps) {
        o.overlap_percent = o.communication_us > 0 ? 100.0 * o.overlap_us / o.communication_us : 0.0;
        o.busy_percent = o.iteration_us > 0 ? 100.0 * (o.iteration_us - o.idle_us) / o.iteration_us : 0.0;
        s.overlaps.push_back(o);
    }
    for (const auto& [key, a] : totals) {
        TraceSummaryRow row;
        std::tie(row.side, row.rank, row.kind, row.name) = key;
        row.count = a.count;
        row.communication = a.communication;
        row.total_us = static_cast<double>(a.total_ns) / 1e3;
        row.mean_us = row.total_us / static_cast<double>(a.count);
        const double it_us = overlaps[{row.side, row.rank}].iteration_us;
        row.percent_of_iteration = it_us > 0 ? 100.0 * row.total_us / it_us : 0.0;
        s.rows.push_back(std::move(row));
    }
    auto side_order = [](const std::string& side) {
        return side == "reference" ? 0 : side == "candidate" ? 1 : 2;
    };
    std::stable_sort(s.rows.begin(), s.rows.end(), [&](const TraceSummaryRow& a, const TraceSummaryRow& b) {
        const auto ka = std::make_tuple(side_order(a.side), a.side, a.rank, -a.total_us, a.name);
        const auto kb = std::make_tuple(side_order(b.side), b.side, b.rank, -b.total_us, b.name);
        return ka < kb;
    });
    std::stable_sort(s.overlaps.begin(), s.overlaps.end(), [&](const SideOverlap& a, const SideOverlap& b) {
        return std::make_tuple(side_order(a.side), a.side, a.rank) <
               std::make_tuple(side_order(b.side), b.side, b.rank);
    });
    return s;
}

} // namespace

TraceSummary summarize_trace(const std::vector<RankTrace>& traces,
                             std::optional<std::pair<std::int64_t, std::int64_t>> window_ns,
                             const std::set<std::string>& communication_marks) {
    EventTotals totals;
    std::map<std::pair<std::string, int>, SideOverlap> overlaps;
    // (side, iteration name) -> rank -> when the rank ended it: the waiting for peers.
    std::map<std::pair<std::string, std::string>, std::map<int, std::int64_t>> iteration_ends;
    for (const RankTrace& trace : traces) {
        const std::set<std::int64_t> issued = nccl_issued_calls(trace);
        for (const SideWindow& win : side_windows(trace, window_ns)) {
            SideOverlap& o = overlaps[{win.side, trace.rank}];
            o.side = win.side;
            o.rank = trace.rank;
            add_window(o, win, breakdown(trace, win.w, communication_marks, issued));
            if (!win.iteration.empty()) {
                iteration_ends[{win.side, win.iteration}][trace.rank] = win.starts.end_ns;
            }
            count_events(trace, win, window_ns, communication_marks, issued, totals);
        }
    }
    for (const auto& [key, ends] : iteration_ends) {
        std::int64_t last = 0;
        for (const auto& [rank, end] : ends) {
            last = std::max(last, end);
        }
        for (const auto& [rank, end] : ends) {
            overlaps[{key.first, rank}].waiting_for_peers_us += static_cast<double>(last - end) / 1e3;
        }
    }
    return summary_of(totals, overlaps);
}

} // namespace pkbw::app
