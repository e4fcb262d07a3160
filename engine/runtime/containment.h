// Containment of one process tree, the candidate's (docs/engine.md, "The sandbox", processes): the
// judge must be able to freeze the whole tree while the reference is timed, read the tree's CPU time,
// and kill it as a whole at the end, including processes that fork and exit faster than any scan of
// /proc can follow. A cgroup v2 directory of its own does all three in the kernel; where none is
// writable (no cgroup2 mount, a read-only one, a user without a delegated subtree, a kernel without
// cgroup.freeze), the container falls back to signals sent pid by pid and says so in describe().
#pragma once

#include "pkbw/core/unique_fd.h"
#include "sandbox.h" // ProcessInfo

#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pkbw::engine {

class ProcessContainer {
public:
    enum class Method { CgroupV2, Signals };

    struct KillReport {
        // Processes this call killed: each was in the tree and alive when it was signalled, and is gone
        // now (at most kMaxNamed of them).
        std::vector<ProcessInfo> named;
        // Processes in the tree when the kill began (a forker that was not frozen may have had more).
        int count_before = 0;
        // Nothing of the tree is left running.
        bool all_gone = false;
        // What was still running when the time was up (empty when all_gone).
        std::vector<ProcessInfo> survivors;
        // Signals only: process groups of sessions the tree made, killed whole, in which no process was
        // seen alive (a forker's living process is the one a scan misses): each held at least one.
        std::vector<pid_t> groups;
    };
    static constexpr std::size_t kMaxNamed = 256;

    // An empty container for one process tree, named after `label` ("cand-r0"). Never throws for lack
    // of cgroups: it falls back to signals with the reason. $PKBW_CONTAINMENT=signals forces the
    // fallback (tests, debugging); unset or "auto" tries cgroup v2 first.
    static ProcessContainer create(const std::string& label);
    ProcessContainer(ProcessContainer&& other) noexcept;
    ProcessContainer& operator=(ProcessContainer&& other) noexcept;
    ProcessContainer(const ProcessContainer&) = delete;
    ProcessContainer& operator=(const ProcessContainer&) = delete;
    // Kills what is left (kill_all) and removes the cgroup's directory.
    ~ProcessContainer();

    Method method() const { return method_; }
    // One line for the run report: "cgroup v2 (DIR): frozen and killed as a whole", or "signals (no
    // writable cgroup v2: WHY): ...".
    std::string describe() const;
    // The cgroup's directory (empty with signals).
    const std::string& directory() const { return directory_; }

    // In the forked child before exec (async-signal-safe only): moves the calling process into the
    // cgroup. Returns 0, or an errno. A no-op with signals.
    int join_in_child() const noexcept;
    // The tree's root (the process forked for it). With signals, the tree is the root's descendants and
    // the orphans this process adopts as their subreaper from now on (children it had before are not
    // the tree's).
    void set_root(pid_t pid);
    pid_t root() const { return root_; }
    // With signals: `pid`, a child of this process started after the root (another container's root,
    // the reference's timing worker), and its descendants are not this tree's. A no-op with cgroups.
    void exclude(pid_t pid) { not_ours_.insert(pid); }

    // Stops every process of the tree and waits (at most timeout_ms) until all are stopped: cgroup v2's
    // cgroup.freeze (a process forked meanwhile is born frozen); with signals, SIGSTOP to every process
    // until a scan finds all stopped. False on timeout (the tree may be partly stopped: thaw it).
    bool freeze(int timeout_ms);
    bool thaw(int timeout_ms);
    bool frozen() const { return frozen_; }

    // CPU time of the whole tree so far, in ms: cgroup v2's cpu.stat, which keeps what exited processes
    // used; with signals, the sum over the living processes only (what exited is missed).
    double cpu_ms() const;
    // The tree's living processes.
    std::vector<ProcessInfo> members() const;

    // Kills the whole tree and waits (at most timeout_ms) until it is gone; reaps the zombies this
    // process adopted (not the root's: its starter waits for it). cgroup v2: frozen first, so what is
    // listed is exactly what is killed, then cgroup.kill (per pid on kernels before 5.14); with
    // signals, SIGKILL per pid and per process group of a session the tree created, until a scan finds
    // nothing.
    KillReport kill_all(int timeout_ms);

    // Kills what is in the containers of judges that are gone and removes their directories: those of
    // `owners` (pids the caller knows are dead), or, when empty, of every pkbw-<pid>[-l<launcher>]-*
    // container whose judge and launcher no longer exist (a living launcher reclaims and reports its
    // own judges' containers). Returns what it killed. create() runs it, so a judge killed outright leaves
    // nothing for long; the launcher runs it for its ranks after a run.
    static std::vector<ProcessInfo> reclaim_orphans(const std::vector<pid_t>& owners = {});

private:
    ProcessContainer() = default;
    // Kills what is left and removes the directory (the destructor, and a move onto this container).
    void release() noexcept;
    // Makes `directory` this container's cgroup; returns why not (empty on success).
    std::string place(const std::string& directory);
    KillReport kill_cgroup(int timeout_ms);
    // The fallback (containment_signals.cpp).
    bool freeze_signals(int timeout_ms);
    bool thaw_signals(int timeout_ms);
    double cpu_ms_signals() const;
    std::vector<ProcessInfo> members_signals() const;
    KillReport kill_signals(int timeout_ms);

    Method method_ = Method::Signals;
    std::string directory_; // the cgroup (CgroupV2)
    std::string why_;       // why signals (Signals)
    UniqueFd procs_;        // <directory>/cgroup.procs, open for join_in_child
    UniqueFd events_;       // <directory>/cgroup.events, polled for "frozen" and "populated"
    bool has_kill_file_ = false;
    pid_t root_ = -1;
    bool frozen_ = false;
    std::set<pid_t> not_ours_; // Signals: this process's children that are not the tree's
};

} // namespace pkbw::engine
