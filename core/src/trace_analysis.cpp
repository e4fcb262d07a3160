#include "pkbw/core/trace_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace pkbw {
namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;

// Sorted, disjoint union of intervals clipped to the window.
std::vector<Interval> union_of(std::vector<Interval> intervals, TimeWindow window) {
    std::vector<Interval> out;
    for (auto& [s, e] : intervals) {
        s = std::max(s, window.start_ns);
        e = std::min(e, window.end_ns);
    }
    std::erase_if(intervals, [](const Interval& i) { return i.second <= i.first; });
    std::sort(intervals.begin(), intervals.end());
    for (const auto& i : intervals) {
        if (!out.empty() && i.first <= out.back().second) {
            out.back().second = std::max(out.back().second, i.second);
        } else {
            out.push_back(i);
        }
    }
    return out;
}

std::int64_t total(const std::vector<Interval>& disjoint) {
    std::int64_t sum = 0;
    for (const auto& [s, e] : disjoint) {
        sum += e - s;
    }
    return sum;
}

std::int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
    std::int64_t sum = 0;
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const auto lo = std::max(a[i].first, b[j].first);
        const auto hi = std::min(a[i].second, b[j].second);
        if (hi > lo) {
            sum += hi - lo;
        }
        (a[i].second < b[j].second) ? ++i : ++j;
    }
    return sum;
}

bool starts_with(const std::string& s, std::string_view prefix) {
    return s.rfind(prefix, 0) == 0;
}

// Reads a non-negative integer field of an NVTX payload, if present.
std::optional<std::int64_t> payload_int(const nlohmann::json& payload, const char* key) {
    if (!payload.is_object()) {
        return std::nullopt;
    }
    auto it = payload.find(key);
    if (it == payload.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0) {
        return std::nullopt;
    }
    return it->get<std::int64_t>();
}

} // namespace

bool is_nccl_kernel(const TraceEvent& event) {
    if (event.kind != TraceEventKind::Kernel) {
        return false;
    }
    for (const auto* name : {&event.name, &event.demangled}) {
        if (starts_with(*name, "ncclDevKernel_") || starts_with(*name, "ncclKernel") ||
            name->find("ncclDevKernel_") != std::string::npos) {
            return true;
        }
    }
    return false;
}

TimeWindow trace_span(const RankTrace& trace) {
    if (trace.events.empty()) {
        return {};
    }
    TimeWindow w{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
    for (const auto& e : trace.events) {
        w.start_ns = std::min(w.start_ns, e.start_ns);
        w.end_ns = std::max(w.end_ns, e.end_ns);
    }
    return w;
}

TimeBreakdown time_breakdown(const RankTrace& trace, TimeWindow window) {
    std::vector<Interval> compute, comm, copies;
    for (const auto& e : trace.events) {
        if (e.kind == TraceEventKind::Kernel) {
            (is_nccl_kernel(e) ? comm : compute).emplace_back(e.start_ns, e.end_ns);
        } else if (e.kind == TraceEventKind::Memcpy || e.kind == TraceEventKind::Memset) {
            copies.emplace_back(e.start_ns, e.end_ns);
        }
    }
    std::vector<Interval> all = compute;
    all.insert(all.end(), comm.begin(), comm.end());
    all.insert(all.end(), copies.begin(), copies.end());
    const auto u_compute = union_of(std::move(compute), window);
    const auto u_comm = union_of(std::move(comm), window);
    TimeBreakdown b;
    b.rank = trace.rank;
    b.window = window;
    b.compute_ns = total(u_compute);
    b.communication_ns = total(u_comm);
    b.copy_ns = total(union_of(std::move(copies), window));
    b.overlap_ns = intersection(u_compute, u_comm);
    b.busy_ns = total(union_of(std::move(all), window));
    b.idle_ns = std::max<std::int64_t>(0, window.length() - b.busy_ns);
    return b;
}

std::vector<IterationStraggler> iteration_stragglers(const std::vector<RankTrace>& traces,
                                                     const std::string& category) {
    struct Seen {
        std::int64_t first_start = std::numeric_limits<std::int64_t>::max();
        std::map<int, std::pair<std::int64_t, std::int64_t>> by_rank; // rank -> (start, end)
    };
    std::map<std::string, Seen> iterations;
    for (const auto& trace : traces) {
        for (const auto& e : trace.events) {
            if (e.kind != TraceEventKind::EngineRange || e.category != category) {
                continue;
            }
            auto& seen = iterations[e.name];
            seen.first_start = std::min(seen.first_start, e.start_ns);
            // A name repeated on one rank is a runtime bug; keep the first so the result stays defined.
            seen.by_rank.emplace(trace.rank, std::make_pair(e.start_ns, e.end_ns));
        }
    }
    std::vector<IterationStraggler> out;
    for (const auto& [name, seen] : iterations) {
        IterationStraggler s;
        s.iteration = name;
        s.ranks = static_cast<int>(seen.by_rank.size());
        std::vector<std::int64_t> ends;
        std::int64_t first_start = std::numeric_limits<std::int64_t>::max(), last_start = 0;
        std::int64_t first_end = std::numeric_limits<std::int64_t>::max();
        s.last_end_ns = std::numeric_limits<std::int64_t>::min();
        for (const auto& [rank, se] : seen.by_rank) {
            const auto [start, end] = se;
            s.duration_ns[rank] = end - start;
            ends.push_back(end);
            first_start = std::min(first_start, start);
            last_start = std::max(last_start, start);
            first_end = std::min(first_end, end);
            if (end > s.last_end_ns) { // strict: lowest rank wins ties (map is rank-ordered)
                s.last_end_ns = end;
                s.last_rank = rank;
            }
        }
        std::sort(ends.begin(), ends.end());
        s.lag_ns = s.last_end_ns - first_end;
        s.lag_vs_next_ns = ends.size() > 1 ? ends[ends.size() - 1] - ends[ends.size() - 2] : 0;
        s.start_spread_ns = last_start - first_start;
        out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), [&](const IterationStraggler& a, const IterationStraggler& b) {
        const auto sa = iterations.at(a.iteration).first_start, sb = iterations.at(b.iteration).first_start;
        return sa != sb ? sa < sb : a.iteration < b.iteration;
    });
    return out;
}

std::vector<KernelStats> kernel_summary(const std::vector<RankTrace>& traces,
                                        std::optional<TimeWindow> window) {
    std::map<std::string, std::vector<std::int64_t>> durations;
    for (const auto& trace : traces) {
        for (const auto& e : trace.events) {
            if (e.kind != TraceEventKind::Kernel) {
                continue;
            }
            if (window && (e.start_ns < window->start_ns || e.start_ns >= window->end_ns)) {
                continue;
            }
            durations[e.display_name()].push_back(e.duration_ns());
        }
    }
    std::vector<KernelStats> out;
    for (auto& [name, d] : durations) {
        std::sort(d.begin(), d.end());
        KernelStats k;
        k.name = name;
        k.count = static_cast<std::int64_t>(d.size());
        for (auto v : d) {
            k.total_ns += v;
        }
        k.mean_ns = static_cast<double>(k.total_ns) / static_cast<double>(k.count);
        // Nearest rank in integers (ceil(95 n / 100)) so that no floating rounding picks a neighbour.
        const auto rank = static_cast<std::size_t>((95 * d.size() + 99) / 100);
        k.p95_ns = d[std::max<std::size_t>(rank, 1) - 1];
        k.min_ns = d.front();
        k.max_ns = d.back();
        out.push_back(std::move(k));
    }
    std::sort(out.begin(), out.end(), [](const KernelStats& a, const KernelStats& b) {
        return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    return out;
}

std::string nccl_collective(const std::string& kernel_name) {
    if (!starts_with(kernel_name, "ncclDevKernel_") && !starts_with(kernel_name, "ncclKernel")) {
        return {};
    }
    // Longest names first: "ReduceScatter" must not be read as "Reduce".
    static const std::pair<const char*, const char*> kNames[] = {
        {"AllReduce", "AllReduce"}, {"AllGather", "AllGather"}, {"ReduceScatter", "ReduceScatter"},
        {"Broadcast", "Broadcast"}, {"SendRecv", "SendRecv"},   {"Send", "SendRecv"},
        {"Recv", "SendRecv"},       {"AlltoAll", "AlltoAll"},   {"Reduce", "Reduce"},
    };
    for (const auto& [needle, collective] : kNames) {
        if (kernel_name.find(needle) != std::string::npos) {
            return collective;
        }
    }
    return {};
}

double busbw_factor(const std::string& collective, int world_size) {
    const double n = world_size;
    if (world_size < 1) {
        return 0;
    }
    if (collective == "AllReduce") {
        return 2.0 * (n - 1) / n;
    }
    if (collective == "AllGather" || collective == "ReduceScatter" || collective == "AlltoAll") {
        return (n - 1) / n;
    }
    if (collective == "Broadcast" || collective == "Reduce" || collective == "SendRecv") {
        return 1.0;
    }
    return 0;
}

std::optional<std::int64_t> CommWorkModel::bytes_for(const std::string& collective) const {
    if (auto it = bytes_per_call.find(collective); it != bytes_per_call.end()) {
        return it->second;
    }
    if (auto it = bytes_per_call.find("*"); it != bytes_per_call.end()) {
        return it->second;
    }
    return std::nullopt;
}

std::vector<CollectiveBandwidth> nccl_bandwidth(const RankTrace& trace, int world_size,
                                                const CommWorkModel& model) {
    // NCCL's NVTX ranges name the API call ("ncclAllReduce"); their k-th occurrence per collective
    // pairs with the k-th kernel of that collective (one communicator, calls in issue order).
    std::map<std::string, std::vector<std::int64_t>> nvtx_sizes;
    for (const auto& e : trace.events) {
        if (e.kind != TraceEventKind::NvtxRange || e.domain != "NCCL" || !starts_with(e.name, "nccl")) {
            continue;
        }
        std::string collective = e.name.substr(4);
        if (collective == "Send" || collective == "Recv") {
            collective = "SendRecv";
        }
        std::int64_t bytes = 0;
        if (auto b = payload_int(e.payload, "bytes")) {
            bytes = *b;
        } else if (auto count = payload_int(e.payload, "count"),
                   size = payload_int(e.payload, "datatype_size");
                   count && size) {
            bytes = *count * *size;
            // NCCL's count is per rank for the gather/scatter collectives; nccl-tests' size is the total.
            if (collective == "AllGather" || collective == "ReduceScatter") {
                bytes *= world_size;
            }
        }
        nvtx_sizes[collective].push_back(bytes);
    }
    std::map<std::string, std::size_t> seen;
    std::vector<CollectiveBandwidth> out;
    for (const auto& e : trace.events) {
        if (!is_nccl_kernel(e)) {
            continue;
        }
        CollectiveBandwidth c;
        c.rank = trace.rank;
        c.kernel = e.name;
        c.collective = nccl_collective(e.name);
        c.start_ns = e.start_ns;
        c.duration_ns = e.duration_ns();
        const auto index = seen[c.collective]++;
        if (auto it = nvtx_sizes.find(c.collective);
            it != nvtx_sizes.end() && index < it->second.size() && it->second[index] > 0) {
            c.bytes = it->second[index];
            c.bytes_source = "nvtx";
        } else if (auto b = model.bytes_for(c.collective)) {
            c.bytes = *b;
            c.bytes_source = "work_model";
        }
        if (c.bytes > 0 && c.duration_ns > 0) {
            c.algbw_gbps = static_cast<double>(c.bytes) / static_cast<double>(c.duration_ns); // B/ns == GB/s
            c.busbw_gbps = c.algbw_gbps * busbw_factor(c.collective, world_size);
        }
        out.push_back(std::move(c));
    }
    return out;
}

std::vector<SideNcclKernels> nccl_kernels_in_side(const std::vector<RankTrace>& traces,
                                                  std::string_view side) {
    std::vector<SideNcclKernels> out;
    for (const auto& trace : traces) {
        std::vector<Interval> iterations;
        for (const auto& e : trace.events) {
            if (e.kind == TraceEventKind::EngineRange && e.category == "iteration" && e.payload.is_object()) {
                const auto it = e.payload.find("side");
                if (it != e.payload.end() && it->is_string() && it->get<std::string>() == side) {
                    iterations.emplace_back(e.start_ns, e.end_ns);
                }
            }
        }
        SideNcclKernels found;
        found.rank = trace.rank;
        for (const auto& e : trace.events) {
            if (!is_nccl_kernel(e)) {
                continue;
            }
            const bool inside = std::any_of(iterations.begin(), iterations.end(), [&](const Interval& i) {
                return e.start_ns >= i.first && e.start_ns <= i.second;
            });
            if (!inside) {
                continue;
            }
            ++found.launches;
            std::string collective = nccl_collective(e.name);
            if (collective.empty()) {
                collective = e.name;
            }
            if (std::find(found.collectives.begin(), found.collectives.end(), collective) ==
                found.collectives.end()) {
                found.collectives.push_back(std::move(collective));
            }
        }
        if (found.launches > 0) {
            out.push_back(std::move(found));
        }
    }
    return out;
}

} // namespace pkbw
