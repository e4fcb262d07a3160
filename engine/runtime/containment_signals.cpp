// ProcessContainer's fallback where no cgroup v2 directory is writable: the tree is found by scanning
// /proc (the root's descendants, and the orphans this process adopts as their subreaper) and stopped,
// continued and killed pid by pid. A process that forks and exits faster than a scan may be missed,
// except where it made a session of its own: its process groups are signalled whole.
#include "containment.h"
#include "process_scan.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <unistd.h>

namespace pkbw::engine {
namespace {

using Clock = std::chrono::steady_clock;
using process_scan::Process;

// The tree: every living process below this one (the judge is the subreaper of whatever the root
// leaves, in any session), except the subtrees of children it had before the root. The root must be a
// child of this process: descendants of a pid that is not one's own child could be anyone's after the
// pid is reused.
process_scan::Tree scan_tree(pid_t root, const std::set<pid_t>& not_ours) {
    return root > 0 ? process_scan::tree_below_self(not_ours) : process_scan::Tree{};
}

Clock::time_point deadline_in(int timeout_ms) {
    return Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
}

} // namespace

bool ProcessContainer::freeze_signals(int timeout_ms) {
    frozen_ = true;
    const auto deadline = deadline_in(timeout_ms);
    std::set<pid_t> previous;
    bool first = true;
    // Stable: two scans in a row find the same processes, all stopped (a stopped process cannot fork).
    for (;;) {
        auto [members, groups] = scan_tree(root_, not_ours_);
        process_scan::signal_groups(groups, SIGSTOP);
        std::set<pid_t> now;
        bool all_stopped = true;
        for (const auto& process : members) {
            now.insert(process.info.pid);
            if (!process.stopped()) {
                all_stopped = false;
                ::kill(process.info.pid, SIGSTOP);
            }
        }
        if (all_stopped && (now == previous || (first && now.empty()))) {
            return true;
        }
        previous = std::move(now);
        first = false;
        if (Clock::now() >= deadline) {
            return false;
        }
        ::usleep(1000);
    }
}

bool ProcessContainer::thaw_signals(int timeout_ms) {
    frozen_ = false;
    const auto deadline = deadline_in(timeout_ms);
    for (;;) {
        auto [members, groups] = scan_tree(root_, not_ours_);
        bool any_stopped = false;
        process_scan::signal_groups(groups, SIGCONT);
        for (const auto& process : members) {
            if (process.stopped()) {
                any_stopped = true;
                ::kill(process.info.pid, SIGCONT);
            }
        }
        if (!any_stopped) {
            return true;
        }
        if (Clock::now() >= deadline) {
            return false;
        }
        ::usleep(1000);
    }
}

double ProcessContainer::cpu_ms_signals() const {
    // Only the living: what exited processes used is gone with them (cgroup v2's cpu.stat keeps it).
    double total = 0;
    for (const auto& process : scan_tree(root_, not_ours_).living) {
        total += std::max(process_cpu_ms(process.info.pid), 0.0);
    }
    return total;
}

std::vector<ProcessInfo> ProcessContainer::members_signals() const {
    std::vector<ProcessInfo> found;
    for (auto& process : scan_tree(root_, not_ours_).living) {
        found.push_back(std::move(process.info));
    }
    return found;
}

ProcessContainer::KillReport ProcessContainer::kill_signals(int timeout_ms) {
    KillReport report;
    const auto deadline = deadline_in(timeout_ms);
    std::vector<ProcessInfo> signalled;
    std::set<pid_t> seen, groups, groups_killed, groups_seen;
    for (bool first = true;; first = false) {
        auto scan = scan_tree(root_, not_ours_);
        if (first) {
            report.count_before = static_cast<int>(scan.living.size());
        }
        groups.insert(scan.groups.begin(), scan.groups.end());
        // Zombies keep a group signallable: reaped first, a group that takes the signal had a living
        // process in it.
        process_scan::reap_zombie_children(root_);
        groups_killed.merge(process_scan::signal_groups(groups, SIGKILL));
        for (const auto& process : scan.living) {
            if (::kill(process.info.pid, SIGKILL) == 0 && seen.insert(process.info.pid).second) {
                signalled.push_back(process.info);
                groups_seen.insert(process.group);
            }
        }
        // The killed become this process's zombies (it is their subreaper); each holds a pid, and keeps
        // its group signallable, until reaped.
        process_scan::reap_zombie_children(root_);
        if ((scan.living.empty() && groups.empty()) || Clock::now() >= deadline) {
            break;
        }
        ::usleep(1000);
    }
    process_scan::reap_zombie_children(root_);
    // What is left: the tree's living processes, and any living process of a group it made.
    report.survivors = members_signals();
    std::set<pid_t> surviving;
    for (const auto& process : report.survivors) {
        surviving.insert(process.pid);
    }
    for (const auto& process : process_scan::all()) {
        if (!process.dead() && groups.count(process.group) && surviving.insert(process.info.pid).second) {
            report.survivors.push_back(process.info);
        }
    }
    report.all_gone = report.survivors.empty();
    for (const pid_t group : groups_killed) {
        if (!groups_seen.count(group)) {
            report.groups.push_back(group);
        }
    }
    for (auto& process : signalled) {
        if (!process_scan::alive(process.pid)) {
            report.named.push_back(std::move(process));
        }
    }
    return report;
}

} // namespace pkbw::engine
