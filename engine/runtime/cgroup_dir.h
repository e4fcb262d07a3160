// The cgroup v2 files ProcessContainer (containment.h) works with: where a container may be created,
// and one cgroup directory's freeze, events, members, CPU time and kill.
#pragma once

#include "sandbox.h" // ProcessInfo

#include <chrono>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace pkbw::engine::cgroup {

using Deadline = std::chrono::steady_clock::time_point;
Deadline deadline_in(int timeout_ms);

// Directories a container may be created in, most specific first: this process's own cgroup (where a
// user's delegated subtree is), then the cgroup2 mount's root. Empty, with `why`, when there is no
// cgroup2 mount.
std::vector<std::string> container_parents(std::string& why);
// rmdir of a cgroup and of any child cgroup made inside it, deepest first (only empty cgroups go).
void remove_tree(const std::string& directory);

struct Events {
    bool read = false; // cgroup.events could be read
    bool populated = false;
    bool frozen = false;
};

struct KillResult {
    std::size_t listed = 0;             // living processes when the kill began (frozen, where it could)
    std::vector<ProcessInfo> signalled; // each living when SIGKILL was sent to it
    bool emptied = false;               // "populated 0" before the deadline
};

struct Directory {
    std::string path;
    int events_fd = -1; // <path>/cgroup.events, open

    Events events() const;
    // Until `done` holds for cgroup.events (the kernel signals each change to a poller: POLLPRI), or the
    // deadline passes.
    bool wait_until(const std::function<bool(const Events&)>& done, Deadline deadline) const;
    bool set_frozen(bool frozen, Deadline deadline) const;
    // Members of this cgroup and of any cgroup made inside it.
    std::vector<pid_t> pids() const;
    // cpu.stat's usage_usec: a core file, present without the cpu controller; it keeps what exited
    // processes used.
    double usage_usec() const;
    // Freezes, lists, SIGKILLs each listed process, then cgroup.kill (when `has_kill_file`), and waits for
    // "populated 0"; until then, new members are killed pid by pid. Leaves the cgroup thawed.
    KillResult kill_all(bool has_kill_file, Deadline deadline) const;
};

} // namespace pkbw::engine::cgroup
