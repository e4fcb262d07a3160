// Whether a timed block saw all of a side's work (docs/perf.md, "What the timing cannot miss"). Pure
// functions over what the processes measured, so that the thresholds are defined once and tested.
#pragma once

#include <optional>
#include <string>

namespace pkbw {

// One timed block as the process that ran it measured it: the events' span (first mark to last:
// every call and every gap between calls), and the host-clock time from just before the first
// mark to the return of a device-wide synchronisation after the last one.
struct BlockBracket {
    double span_ms = 0;
    double host_ms = 0;
    int calls = 0;
};

// Device work the side left outside the measured stream (a stream of its own, the per-thread
// default stream, a kernel still running at the last mark) keeps the device-wide synchronisation
// waiting after the last mark: host_ms exceeds span_ms by more than a launch and a synchronisation.
// Returns the finding's text, or nothing when the block is consistent.
std::optional<std::string> untimed_device_work(const BlockBracket& block);

// After a block (or a call) has returned, the side's process should be idle, waiting for the next
// request. CPU time it used in an idle window of `window_ms` means work left running on its host
// threads.
std::optional<std::string> work_after_return(double idle_cpu_ms, double window_ms);

// The judge times each of the candidate's blocks on its own clock (request sent to reply received,
// judges aligned before): the candidate process reports how long the whole request took it
// (`reported_ms`: barrier, warm-up and timed calls) from inside, where a candidate could forge it. A judge time far beyond the reported one means the reported times are not the
// block's.
std::optional<std::string> judge_clock_disagrees(double judge_ms, double reported_ms);

// The allowances, exposed for docs and tests.
inline constexpr double kJudgeAllowanceMs = 25.0; // the channel round trip, the candidates' barrier
inline constexpr double kJudgeAllowanceFraction = 0.5;
inline constexpr double kUntimedAllowanceMs = 2.0;        // launch of the first mark + final sync
inline constexpr double kUntimedAllowanceFraction = 0.10; // of the span (clock granularity, jitter)
inline constexpr double kIdleCpuAllowanceMs = 10.0;
inline constexpr double kIdleCpuAllowanceFraction = 0.25; // of the window: a quarter of one core

} // namespace pkbw
