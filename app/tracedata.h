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
    std::uint32_t name = 0; // index into TimelineData::names
};

struct TimelineLane {
    int rank = 0;
    std::string name;                  // "stream 7", "NVTX", "CPU"
    std::vector<TimelineEvent> events; // by start
    double max_duration_us = 0;        // bounds the backward search for events overlapping a window
};

struct TimelineData {
    std::vector<std::string> names;
    std::vector<TimelineLane> lanes; // by rank, then lane name
    double begin_us = 0, end_us = 0;
    std::size_t event_count() const;

    // Indices [first, last) of the lane's events that overlap [t0, t1).
    std::pair<std::size_t, std::size_t> visible(const TimelineLane& lane, double t0, double t1) const;
    void finish(); // sorts lanes and events, computes bounds
};

// "X" (complete) and "B"/"E" events of a Chrome trace (an array or {"traceEvents": [...]});
// lanes are named from "tid" (streams in Kineto) and the file's events all belong to `rank`.
// Throws pkbw::FormatError naming the file.
void append_chrome_trace(TimelineData& data, const std::filesystem::path& path, int rank);

// pkbw's own traces (core/trace.h; from the store or rank_<r>.*.jsonl files): per rank a lane per
// stream for GPU activity, one per NVTX domain, one for the engine's ranges.
TimelineData timeline_from_traces(const std::vector<RankTrace>& traces);

// `ranks` x `lanes_per_rank` lanes of `events_per_lane` back-to-back kernels of varied length.
TimelineData synthetic_trace(int ranks, int lanes_per_rank, int events_per_lane, std::uint64_t seed = 1);

} // namespace pkbw::app
