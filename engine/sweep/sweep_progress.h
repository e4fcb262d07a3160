// A sweep's progress as it runs: on a terminal one redrawn line (bar, counts, ETA); otherwise one
// line per finished pair; with --json one JSON line per event (docs/sweeps.md "Output").
#pragma once

#include "pkbw/core/sweep_store.h"

#include <chrono>
#include <iosfwd>
#include <map>
#include <string>

namespace pkbw::cli {

class SweepProgress {
public:
    SweepProgress(std::ostream& out, bool json, bool terminal, std::size_t total, std::size_t already_done,
                  std::size_t slots);
    void started(const SweepPair& pair);
    // `speedup`: a perf pair's pkbw speedup, interval and verdict as text ("" when not timed).
    void finished(const SweepPair& pair, const std::string& verdict, double seconds,
                  const std::string& speedup = "");
    void close(); // ends the redrawn line

    // Seconds left, from the mean wall time of the pairs finished here and the slots in use; -1 before
    // the first pair finished.
    double eta_seconds() const;

private:
    void redraw();

    std::ostream& out_;
    bool json_, terminal_;
    std::size_t total_, done_, finished_here_ = 0, running_ = 0, slots_;
    double seconds_here_ = 0;
    std::map<std::string, int> verdicts_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

} // namespace pkbw::cli
