// The watchdog's clock: each phase's deadline (PhaseTimeouts), a rank's deadline restarted as it
// enters a phase, the ranks that ran past theirs and how long the wait loop may sleep before the next.
#include "launch_rank.h"
#include "pkbw/core/status.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace pkbw::cli {

PhaseTimeouts PhaseTimeouts::defaults() {
    // The ranks' phases (core/status.h), then the launcher's own: "exit" runs from rank_done to the
    // process ending, "default" covers a phase this table does not name.
    static const std::pair<std::string_view, double> kSeconds[] = {
        {status::kPhaseStart, 60},     {status::kPhaseRendezvous, 120},
        {status::kPhaseInputs, 60},    {status::kPhaseReference, 120},
        {status::kPhaseCandidate, 60}, {status::kPhaseCompare, 60},
        {status::kPhasePerf, 600},     {status::kPhaseTrace, 300},
        {status::kPhaseTeardown, 30},  {"exit", 30},
        {status::kPhaseCompile, 300},  {"default", 120}};
    PhaseTimeouts t;
    for (const auto& [phase, seconds] : kSeconds)
        t.seconds.emplace(phase, seconds);
    return t;
}

const std::vector<std::string>& PhaseTimeouts::phase_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> phases;
        for (std::string_view phase :
             {status::kPhaseStart, status::kPhaseCompile, status::kPhaseRendezvous, status::kPhaseInputs,
              status::kPhaseReference, status::kPhaseCandidate, status::kPhaseCompare, status::kPhasePerf,
              status::kPhaseTrace, status::kPhaseTeardown})
            phases.emplace_back(phase);
        return phases;
    }();
    return names;
}

double PhaseTimeouts::for_phase(const std::string& phase) const {
    auto found = seconds.find(phase);
    if (found != seconds.end())
        return found->second;
    found = seconds.find("default");
    return found != seconds.end() ? found->second : 120;
}

void PhaseTimeouts::fit_inputs(std::uint64_t bytes) {
    // A rank's inputs are drawn on its host threads: about 200 MB a second at the least (the plain
    // normal draw, 30 ns a 2-byte value, on 8 threads). Problem 68 at PKB's size draws a 57 GB table
    // at W = 1, which outran the 60 s default on a 16-core H200 host.
    constexpr double kDrawnBytesPerSecond = 200e6;
    const std::string inputs(status::kPhaseInputs);
    if (asked.count(inputs) == 0) {
        seconds[inputs] = for_phase(inputs) + static_cast<double>(bytes) / kDrawnBytesPerSecond;
    }
}

void PhaseTimeouts::scale(double factor) {
    for (auto& [phase, value] : seconds)
        value *= factor;
}

namespace launch {

void set_phase(Rank& rank, const LaunchSpec& spec, std::string_view phase) {
    rank.report.phase = phase;
    rank.deadline_seconds = spec.timeouts.for_phase(rank.report.phase);
    rank.deadline =
        Clock::now() + std::chrono::milliseconds(static_cast<std::int64_t>(rank.deadline_seconds * 1000));
}

std::vector<int> expired_ranks(const std::vector<Rank>& ranks, Clock::time_point now) {
    std::vector<int> expired;
    for (const auto& rank : ranks) {
        if (rank.running() && now >= rank.deadline)
            expired.push_back(rank.report.rank);
    }
    return expired;
}

std::string timeout_message(const std::vector<Rank>& ranks, const std::vector<int>& expired,
                            Clock::time_point now) {
    std::string message;
    for (int r : expired) {
        const Rank& rank = ranks[static_cast<std::size_t>(r)];
        message += (message.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) +
                   " timed out in phase " + rank.report.phase;
        if (rank.report.trial >= 0)
            message += " (trial " + std::to_string(rank.report.trial) + ")";
        message += " after " + std::to_string(static_cast<int>(rank.deadline_seconds)) + " s";
    }
    std::string others;
    for (const auto& rank : ranks) {
        if (rank.running() && now < rank.deadline)
            others += (others.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank.report.rank) +
                      " in " + rank.report.phase;
    }
    if (!others.empty())
        message += " (still running: " + others + ")";
    return message;
}

int poll_wait_ms(const std::vector<Rank>& ranks, Clock::time_point now, bool killing) {
    int wait_ms = 250;
    for (const auto& rank : ranks) {
        if (rank.running() && !killing) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(rank.deadline - now).count();
            wait_ms = static_cast<int>(std::clamp<std::int64_t>(left + 1, 0, wait_ms));
        }
    }
    return wait_ms;
}

} // namespace launch
} // namespace pkbw::cli
