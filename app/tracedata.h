// Timeline data: lanes (a stream or an NVTX range track) grouped by rank, each holding its events
// sorted by start time. Qt-free. Loaded from Chrome/Kineto trace JSON (one file per rank) until the
// store has trace tables; synthetic() feeds the bench and the tests.
#pragma once

#include "pkbw/core/trace.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace pkbw::app {

struct TimelineEvent {
    double start_us = 0, duration_us = 0;
    std::uint32_t name = 0;   // index into TimelineData::names
    std::uint16_t depth = 0;  // nesting level in its lane (finish()): ranges inside ranges stack below
    std::uint32_t detail = 0; // index into TimelineData::details (0: none): a kernel's launch configuration
    std::int64_t correlation = 0; // ties a launch (a CUDA runtime call) to its kernel; 0: none
};

struct TimelineLane {
    int rank = 0;
    std::string name;                  // "stream 7", "NVTX", "CPU"
    std::vector<TimelineEvent> events; // by start
    double max_duration_us = 0;        // bounds the backward search for events overlapping a window
    int depths = 1;                    // nesting levels (rows) the lane needs
};

// A traced iteration of one side on one rank (engine "iteration" ranges).
struct IterationSpan {
    int rank = 0;
    std::string side; // "reference", "candidate", ...
    double start_us = 0, end_us = 0;
};

struct TimelineData {
    std::vector<std::string> names;
    // Per event kind what a click shows beyond name and times: a kernel's launch configuration
    // (grid, block, registers, shared memory), a copy's kind and size, the correlation id that ties
    // it to its launch. details[0] is "" (none).
    std::vector<std::string> details{std::string()};
    std::vector<TimelineLane> lanes; // by rank, then lane name
    double begin_us = 0, end_us = 0;
    std::vector<IterationSpan> iterations; // by start
    std::size_t event_count() const;
    // Where the timeline opens: the traced iterations of every side (reference and candidate in one
    // view) when there are any, else the whole trace; but where the sides' iterations lie so far apart
    // that the gap would take over two thirds of that view (a side's warm-up call between them: 5.3 ms
    // against 0.4 ms of iterations a side on the H200, its kernels then one pixel wide), the
    // candidate's alone (focus_side() says which).
    std::pair<double, double> focus() const;
    // The side focus() shows alone ("candidate"), or "" when it shows every side's iterations.
    std::string focus_side() const;

    // Indices [first, last) of the lane's events that overlap [t0, t1).
    std::pair<std::size_t, std::size_t> visible(const TimelineLane& lane, double t0, double t1) const;
    void finish(); // sorts lanes and events, computes bounds and nesting depths
    // The span [first start, last end] of the events whose name contains `text` (case-insensitive), on
    // `rank` (all ranks when < 0) and within [t0, t1) when t1 > t0; nothing (0, 0) when none match.
    std::pair<double, double> span_of(const std::string& text, int rank = -1, double t0 = 0,
                                      double t1 = 0) const;
    // How many events' names contain `text` (case-insensitive).
    std::size_t count_matching(const std::string& text) const;
    // The other events of the same rank with the event's correlation id (a launch and its kernel), as
    // (lane, event) indices; none for an event without one.
    std::vector<std::pair<std::size_t, std::size_t>> correlated(std::size_t lane, std::size_t event) const;
};

// The track a torch-profiler event belongs on, as Perfetto and TensorBoard separate them (pkbw keeps
// them as NVTX ranges of domain "torch" with Kineto's category): "CPU" (operators, annotations,
// Python), "CUDA runtime" (runtime and driver calls: host time spent launching and waiting) or "GPU
// annotation" (the profiler's copies of annotations on the device); "" for any other event.
std::string torch_track(const pkbw::TraceEvent& event);
// A CUDA runtime or driver API call recorded by pkbw's own tracer (domain "cupti", docs/tracing.md):
// drawn in a "CUDA API" lane of its rank, its correlation id linking it to what it launched.
bool is_cuda_api_call(const pkbw::TraceEvent& event);

// A kernel's launch configuration and a copy's size, as a click shows them ("" when nothing is known).
std::string event_detail(const pkbw::TraceEvent& event);

// "X" (complete) and "B"/"E" events of a Chrome trace (an array or {"traceEvents": [...]});
// lanes are named from "tid" (streams in Kineto) and the file's events all belong to `rank`.
// Throws pkbw::FormatError naming the file.
void append_chrome_trace(TimelineData& data, const std::filesystem::path& path, int rank);

// pkbw's own traces (core/trace.h; from the store or rank_<r>.*.jsonl files): per rank a lane per
// stream for GPU activity, one per NVTX domain, one for the engine's ranges.
TimelineData timeline_from_traces(const std::vector<RankTrace>& traces);

// The side of an engine "iteration" range: its payload's "side", else the name's prefix ("reference/3").
std::string iteration_side(const pkbw::TraceEvent& event);

// `ranks` x `lanes_per_rank` lanes of `events_per_lane` back-to-back kernels of varied length.
TimelineData synthetic_trace(int ranks, int lanes_per_rank, int events_per_lane, std::uint64_t seed = 1);

} // namespace pkbw::app
