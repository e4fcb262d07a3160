// The launcher's view of one rank process, shared by the files that make up launch_ranks (launcher.h)
// and by nothing else: launch_spawn.cpp starts a rank, launch_streams.cpp reads its pipes,
// launch_phases.cpp times its phases against their deadlines, launch_exit.cpp says how it ended, and
// launcher.cpp runs the ranks as one group.
#pragma once

#include "fd.h"
#include "launcher.h"

#include <chrono>
#include <csignal>
#include <map>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <sys/wait.h>
#include <vector>

namespace pkbw::cli::launch {

using Clock = std::chrono::steady_clock;

constexpr int kControlFd = 3;
constexpr int kRendezvousListenFd = 4; // rank 0 only: PKBW_RDZV_LISTEN_FD

inline double since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// One rank's process and pipes. The destructor kills and reaps it if it is still running.
struct Rank {
    RankReport report;
    UniqueFd out, err, control, log;
    std::string control_buffer, out_line, err_line;
    bool control_overflow = false;
    std::size_t forwarded_lines = 0;
    Clock::time_point deadline;
    double deadline_seconds = 0;

    Rank() = default;
    Rank(const Rank&) = delete;
    Rank(Rank&&) = default;
    ~Rank() {
        if (report.pid > 0 && !report.exited) {
            ::kill(report.pid, SIGKILL);
            ::waitpid(report.pid, nullptr, 0);
        }
    }
    bool running() const { return report.pid > 0 && !report.exited; }
};

// launch_spawn.cpp
// The environment every rank of the run shares (docs/engine.md), on top of spec.extra_env.
std::map<std::string, std::string> run_environment(const LaunchSpec& spec, const LaunchOutcome& outcome);
// Opens rank `r`'s log and pipes and starts it in process group `group` (0: it founds the group, and
// `group` becomes its pid). `listener` >= 0: the rendezvous socket, passed as kRendezvousListenFd.
// Returns why it could not start, empty when it did.
std::string start_rank(Rank& rank, int r, const LaunchSpec& spec,
                       const std::map<std::string, std::string>& common, pid_t& group, int listener);

// launch_streams.cpp
// Reads what the control pipe holds; returns false when nothing more can be read now (empty pipe,
// or end of file: then the pipe is closed).
bool read_control(Rank& rank, const LaunchSpec& spec, LaunchObserver& observer);
// Reads what stdout or stderr (`fd`, one of rank.out and rank.err) holds into the rank's log, its
// stderr tail and the observer's on_log; closes `fd` at its end.
void read_output(Rank& rank, UniqueFd& fd, bool is_stderr, const LaunchSpec& spec, LaunchObserver& observer);

// launch_phases.cpp
// Enters `phase`: its deadline starts now.
void set_phase(Rank& rank, const LaunchSpec& spec, std::string_view phase);
// The running ranks whose phase's deadline has passed at `now`.
std::vector<int> expired_ranks(const std::vector<Rank>& ranks, Clock::time_point now);
// Names each expired rank, its phase, trial and deadline, and the ranks still within theirs.
std::string timeout_message(const std::vector<Rank>& ranks, const std::vector<int>& expired,
                            Clock::time_point now);
// How long the wait loop may poll: at most 250 ms, and no later than the next deadline of a running
// rank while the launcher is not killing.
int poll_wait_ms(const std::vector<Rank>& ranks, Clock::time_point now, bool killing);

// launch_exit.cpp
// "rank R crashed with SIGSEGV in phase P (trial T): <last error>; last stderr: ..."
std::string describe_exit(const RankReport& report);
LaunchEnd classify_exit(const RankReport& report);
// Of the ranks seen failed at once, the one that caused it first: a signal before an exit before
// finishing, before a broken solution (exit 4), before any other code; a peer that failed because
// the culprit vanished (a lost rendezvous connection exits with 5) comes after.
int first_culprit(const std::vector<Rank>& ranks, std::vector<int> failed);

} // namespace pkbw::cli::launch
