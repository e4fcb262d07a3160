// launch_ranks: the run's ranks as one group, from the first fork to the last reap and the cleanup
// after it. What happens to one rank is in the launch_*.cpp files (launch_rank.h says which).
#include "containment.h"
#include "launch_rank.h"
#include "loopback.h"
#include "pkbw/core/error.h"
#include "pkbw/core/status.h"
#include "sandbox.h"
#include "signals.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace pkbw::cli {
namespace launch {
namespace {

// The descriptors one poll waits on, and whose each is: a rank's stream (0 control, 1 stdout,
// 2 stderr), or no rank for the signal pipe.
struct PollSet {
    std::vector<pollfd> fds;
    std::vector<std::pair<Rank*, int>> owners;
    bool pipes_open = false; // a rank's stream among them
};

// Kills what the ranks left behind (a killed judge's candidate's container, processes re-parented to
// pkbw, the subreaper) and names it: "pid P (command)", "process group G".
std::vector<std::string> kill_leftovers(const std::vector<pid_t>& judges) {
    // A judge that was killed cannot kill what its candidate started: its candidate's container is left
    // (killed here as a whole, then removed), and those processes are re-parented here, to be found.
    auto left = engine::ProcessContainer::reclaim_orphans(judges);
    std::vector<pid_t> groups; // killed whole, none of their processes seen (a fast forker's)
    for (auto& process : engine::kill_descendants(::getpid(), &groups))
        left.push_back(std::move(process));
    std::vector<std::string> leftovers;
    for (const auto& process : left)
        leftovers.push_back("pid " + std::to_string(process.pid) + " (" + process.command.substr(0, 200) +
                            ")");
    for (const pid_t group : groups)
        leftovers.push_back("process group " + std::to_string(group));
    return leftovers;
}

// The W ranks of one run in one process group, ended as one: the first failure (a rank's crash or
// timeout, an interrupt) kills them all and is the outcome's end; what follows it is its consequence.
class RankGroup {
public:
    RankGroup(const LaunchSpec& spec, LaunchObserver& observer, LaunchOutcome& outcome)
        : spec_(spec)
        , observer_(observer)
        , outcome_(outcome)
        , ranks_(static_cast<std::size_t>(spec.world_size)) {}

    // Starts rank after rank until one cannot start; rank 0 takes `listener` (and it is closed after).
    void start(std::optional<engine::LoopbackListener> listener);
    // Reads the ranks' pipes and times their phases until every rank has ended and its pipes are read.
    void watch();
    // Kills and reaps what is left, fills the outcome's ranks and message, and removes what the ranks
    // left behind.
    void finish();

private:
    void kill_all();
    void fail(LaunchEnd end, std::string message, std::vector<int> culprits);
    std::vector<int> reap_exited();
    void judge_failures(std::vector<int> failed);
    bool holds_for_a_cause(Clock::time_point now) const;
    void check_deadlines(Clock::time_point now);
    PollSet poll_set();
    void read_ready(PollSet& set, int wait_ms);

    const LaunchSpec& spec_;
    LaunchObserver& observer_;
    LaunchOutcome& outcome_;
    std::vector<Rank> ranks_;
    pid_t group_ = 0;
    bool killing_ = false;
    Clock::time_point kill_time_{};
    // Failures seen while none of them is a cause (a signal, a solution that broke or ended the
    // process): held up to kCauseGrace for one, since a rank whose peer left fails its rendezvous or
    // collective first and would otherwise be named.
    std::vector<int> held_failures_;
    std::optional<Clock::time_point> held_since_;
};

constexpr auto kCauseGrace = std::chrono::seconds(2);

void RankGroup::kill_all() {
    if (group_ > 0)
        ::kill(-group_, SIGKILL);
    for (auto& rank : ranks_) {
        if (rank.running())
            ::kill(rank.report.pid, SIGKILL); // a rank that left the group
    }
    if (!killing_)
        kill_time_ = Clock::now();
    killing_ = true;
}

void RankGroup::fail(LaunchEnd end, std::string message, std::vector<int> culprits) {
    if (killing_)
        return;
    outcome_.end = end;
    outcome_.message = std::move(message);
    outcome_.culprit_ranks = std::move(culprits);
    kill_all();
}

void RankGroup::start(std::optional<engine::LoopbackListener> listener) {
    const auto common = run_environment(spec_, outcome_);
    for (int r = 0; r < spec_.world_size && !killing_; ++r) {
        const bool gets_listener = r == 0 && spec_.rank0_inherits_listener;
        const std::string error = start_rank(ranks_[static_cast<std::size_t>(r)], r, spec_, common, group_,
                                             gets_listener ? listener->fd() : -1);
        // Rank 0 holds it now (or, for a rank program that binds MASTER_PORT itself, it must be free).
        listener.reset();
        if (!error.empty()) {
            fail(LaunchEnd::SpawnFailed, "rank " + std::to_string(r) + ": " + error, {r});
            break;
        }
    }
}

// Reaps every child that ended (cheap, and robust to coalesced SIGCHLDs); returns those that failed
// while the launcher was not killing.
std::vector<int> RankGroup::reap_exited() {
    std::vector<int> failed;
    for (auto& rank : ranks_) {
        if (!rank.running())
            continue;
        int status = 0;
        pid_t got = ::waitpid(rank.report.pid, &status, WNOHANG);
        if (got != rank.report.pid)
            continue;
        RankReport& report = rank.report;
        report.exited = true;
        if (WIFEXITED(status))
            report.exit_code = WEXITSTATUS(status);
        else if (WIFSIGNALED(status))
            report.signal = WTERMSIG(status);
        report.killed = killing_ && report.signal == SIGKILL;
        // Its last events (results, rank_done, error) may still be in the pipe: read them before
        // judging, also when it was killed because a peer failed (what it reported before stays
        // reported). An empty pipe that is not at its end means a grandchild holds it open; one
        // that keeps writing is not waited for past a pipe buffer's worth of reads.
        for (int reads = 0; rank.control && reads < 64 && read_control(rank, spec_, observer_); ++reads) {
        }
        observer_.on_rank_exit(report);
        if (!killing_ && (report.signal != 0 || report.exit_code != 0 || !report.done))
            failed.push_back(report.rank);
    }
    return failed;
}

// Whether failures held so far may wait for a cause: none of them is one, a rank is still running, and
// the grace has not passed.
bool RankGroup::holds_for_a_cause(Clock::time_point now) const {
    const bool caused = std::any_of(held_failures_.begin(), held_failures_.end(), [&](int r) {
        const RankReport& report = ranks_[static_cast<std::size_t>(r)].report;
        return report.signal != 0 || report.exit_code == status::kExitOk ||
               report.exit_code == status::kExitSolutionBroke;
    });
    const bool running = std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running(); });
    return !caused && running && held_since_ && now - *held_since_ < kCauseGrace;
}

void RankGroup::judge_failures(std::vector<int> failed) {
    if (!failed.empty() && !held_since_)
        held_since_ = Clock::now();
    held_failures_.insert(held_failures_.end(), failed.begin(), failed.end());
    if (held_failures_.empty() || (interrupt_signal() == 0 && holds_for_a_cause(Clock::now())))
        return;
    failed = std::move(held_failures_);
    held_failures_.clear();
    // A rank ended by SIGTERM or SIGINT while this launcher was not killing: scancel and a
    // terminal's Ctrl-C signal every process of the job or group at once, and the rank may be seen
    // dead before this process's own handler has run. Give the handler a moment; if the interrupt
    // arrives, the run was interrupted, not crashed (a sweep then leaves the pair to its resume).
    if (!failed.empty() && interrupt_signal() == 0 && std::any_of(failed.begin(), failed.end(), [&](int r) {
            const int sig = ranks_[static_cast<std::size_t>(r)].report.signal;
            return sig == SIGTERM || sig == SIGINT;
        }))
        await_interrupt(std::chrono::milliseconds(500));
    if (!failed.empty() && interrupt_signal() != 0) {
        fail(LaunchEnd::Interrupted, "interrupted by " + signal_name(interrupt_signal()), {});
        failed.clear();
    }
    if (!failed.empty()) {
        // Several ranks seen dead at once: the one that caused it is named, not a peer that failed
        // because it vanished.
        const int culprit = first_culprit(ranks_, failed);
        fail(classify_exit(ranks_[static_cast<std::size_t>(culprit)].report), {},
             {culprit}); // message composed at the end: pipes first
    }
}

void RankGroup::check_deadlines(Clock::time_point now) {
    const std::vector<int> expired = expired_ranks(ranks_, now);
    if (!expired.empty())
        fail(LaunchEnd::Timeout, timeout_message(ranks_, expired, now), expired);
}

PollSet RankGroup::poll_set() {
    PollSet set;
    if (signal_pipe_fd() >= 0) {
        set.fds.push_back({signal_pipe_fd(), POLLIN, 0});
        set.owners.push_back({nullptr, -1});
    }
    for (auto& rank : ranks_) {
        UniqueFd* streams[3] = {&rank.control, &rank.out, &rank.err};
        for (int s = 0; s < 3; ++s) {
            if (*streams[s]) {
                set.fds.push_back({streams[s]->get(), POLLIN, 0});
                set.owners.push_back({&rank, s});
            }
        }
    }
    set.pipes_open = set.owners.size() > (signal_pipe_fd() >= 0 ? 1u : 0u);
    return set;
}

void RankGroup::read_ready(PollSet& set, int wait_ms) {
    int n = ::poll(set.fds.data(), set.fds.size(), wait_ms);
    if (n < 0 && errno != EINTR)
        throw Error(std::string("poll failed in the launcher: ") + std::strerror(errno));
    for (std::size_t i = 0; n > 0 && i < set.fds.size(); ++i) {
        if (!(set.fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        auto [rank, stream] = set.owners[i];
        if (!rank)
            drain_signal_pipe();
        else if (stream == 0)
            read_control(*rank, spec_, observer_);
        else
            read_output(*rank, stream == 1 ? rank->out : rank->err, stream == 2, spec_, observer_);
    }
}

void RankGroup::watch() {
    std::optional<Clock::time_point> all_exited;
    while (true) {
        if (!killing_ && interrupt_signal() != 0)
            fail(LaunchEnd::Interrupted, "interrupted by " + signal_name(interrupt_signal()), {});
        judge_failures(reap_exited());
        auto now = Clock::now();
        if (!killing_)
            check_deadlines(now);
        if (!all_exited &&
            std::none_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running(); }))
            all_exited = now;

        PollSet set = poll_set();
        // Ranks gone: finish reading; a grandchild outside the group holding a pipe is not waited for.
        if (all_exited && (!set.pipes_open || since(*all_exited) > 2.0))
            break;
        if (killing_ && since(kill_time_) > 20.0)
            break; // unkillable (D state): the Rank destructors still try to reap
        const int wait_ms = poll_wait_ms(ranks_, now, killing_);
        observer_.on_wait();
        read_ready(set, wait_ms);
    }
}

void RankGroup::finish() {
    kill_all(); // stragglers of the group (grandchildren) too
    for (auto& rank : ranks_) {
        if (rank.running()) {
            int status = 0;
            if (::waitpid(rank.report.pid, &status, 0) == rank.report.pid) {
                rank.report.exited = true;
                rank.report.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
                rank.report.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
                rank.report.killed = true;
            }
        }
        outcome_.ranks.push_back(rank.report);
    }
    if (outcome_.message.empty() && !outcome_.culprit_ranks.empty())
        outcome_.message = describe_exit(outcome_.ranks[static_cast<std::size_t>(outcome_.culprit_ranks[0])]);
    std::vector<pid_t> judges;
    for (const auto& rank : ranks_)
        judges.push_back(rank.report.pid);
    outcome_.leftovers = kill_leftovers(judges);
    outcome_.shm_segments_removed = remove_shm_segments(outcome_.segment_tag);
    // Every judge has ended: a candidate's directory still there is left over. A judge killed (by this
    // launcher, for memory) or ending on a path that runs no destructor leaves its candidate's; on a
    // loaded host that happened to one that ended on its own (the background-thread case in CI).
    remove_candidate_directories(std::vector<int>(judges.begin(), judges.end()),
                                 std::filesystem::temp_directory_path());
}

} // namespace
} // namespace launch

LaunchOutcome launch_ranks(const LaunchSpec& spec, LaunchObserver& observer) {
    auto start = launch::Clock::now();
    // Orphans of the ranks' processes are re-parented to pkbw, which kills them at the end.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    // The read ends of every rank's control pipe are pkbw's descriptors: a process of the same user
    // could open them through /proc/<pid>/fd and write forged events. Not dumpable, /proc/<pid>/fd
    // and mem are closed to processes without CAP_SYS_PTRACE (the native candidate's Landlock domain
    // closes them even to root; a PKB Python candidate run as root is not covered: docs/pkb-interop.md).
    ::prctl(PR_SET_DUMPABLE, 0);
    LaunchOutcome outcome;
    outcome.token = random_token();
    // Segment names carry a tag of their own, not the token: a candidate's segments are named after the
    // run too, and must tell it nothing of the judges' token.
    outcome.segment_tag = random_token().substr(0, 16);
    // Held until rank 0 has it (RankGroup::start), so the port cannot be taken in between.
    std::optional<engine::LoopbackListener> listener(engine::LoopbackListener::open(spec.world_size + 8));
    outcome.port = listener->port();
    launch::RankGroup group(spec, observer, outcome);
    group.start(std::move(listener));
    group.watch();
    group.finish();
    outcome.seconds = launch::since(start);
    return outcome;
}

} // namespace pkbw::cli
