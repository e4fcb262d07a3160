// A run's progress as the ranks report it, for `eval`, `perf` and `dryrun` (docs/cli.md "Progress"):
// a trial is done when every rank sent its rank_result; a timed block when rank 0 sent perf_progress.
// As the sweep's progress: on a terminal one redrawn line (stderr) with a line per finished trial;
// otherwise a line per trial and per timed block; with --json a `progress` event per trial and block on
// stdout. It only reads the events the launcher already receives: nothing is added to the ranks'
// timed path.
#pragma once

#include "pkbw/core/protocol.h"

#include <chrono>
#include <iosfwd>
#include <map>
#include <string>

namespace pkbw::cli {

// A duration as the progress lines print it (a run's and a sweep's): "1h02m", "3m12s", "45s".
std::string format_duration(double seconds);

class RunProgress {
public:
    static constexpr double kQuietSeconds = 30;
    // `out` gets the JSON events, `err` the text lines; `terminal`: err is a terminal.
    // `compares`: eval and perf compare a trial's outputs ("match"); a dryrun's trial only runs ("ran").
    RunProgress(std::ostream& out, std::ostream& err, bool json, bool terminal, int world_size, int trials,
                int launches, bool compares, double quiet_seconds = kQuietSeconds);
    void set_launch(int index);      // perf: launch `index` (0-based) of `launches` starts
    void set_launches(int launches); // perf: the run extended to this many launches
    void on_event(int rank, const protocol::Message& message);
    // The launcher's wait loop (at least every 250 ms): a run that reports nothing still shows that it
    // runs and where: on a terminal the redrawn line's seconds tick; otherwise, after each
    // kQuietSeconds without a trial or block, a line (or a `progress` event, stage "waiting") naming
    // rank 0's phase and how long it has been quiet. The watchdog's deadlines are the launcher's.
    void on_wait();
    void close(); // ends the redrawn line before the run's summary

private:
    void trial_done(int trial);
    void block_done(const nlohmann::json& body);
    void redraw();
    void line(const std::string& text);
    void event(nlohmann::json body);
    double seconds() const;

    std::ostream& out_;
    std::ostream& err_;
    bool json_, terminal_, compares_;
    double quiet_seconds_;
    int world_size_, trials_, launches_, launch_ = 0;
    std::map<int, std::map<int, std::string>> trial_ranks_; // trial -> rank -> status
    int trials_done_ = 0;
    std::string phase_;      // rank 0's last phase
    std::string status_;     // the redrawn line's text after the counts
    std::string last_phase_; // rank 0's last phase, also off a terminal (the waiting line names it)
    double last_news_ = 0;   // seconds() of the last trial, block or waiting line
    double last_redraw_ = 0; // seconds() of the last redraw
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

} // namespace pkbw::cli
