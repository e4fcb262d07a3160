// One scan of /proc: every process with its parent, state, process group and session. What the
// process-tree helpers (sandbox.h) and the signals fallback of ProcessContainer (containment.h) walk.
#pragma once

#include "sandbox.h" // ProcessInfo

#include <optional>
#include <set>
#include <sys/types.h>
#include <vector>

namespace pkbw::engine::process_scan {

struct Process {
    ProcessInfo info;
    char state = '?'; // /proc/<pid>/stat's: R, S, D, T (stopped), t (traced), Z (zombie), ...
    pid_t group = 0;
    pid_t session = 0;

    bool stopped() const { return state == 'T' || state == 't'; }
    bool dead() const { return state == 'Z' || state == 'X'; }
};

// One process, or nothing when it is gone.
std::optional<Process> read(pid_t pid);
// Every process of the machine (of this pid namespace), living or zombie.
std::vector<Process> all();
// The living processes below `root` in `processes` (root excluded), children before grandchildren.
// `skip`: children of root whose subtrees are left out.
std::vector<Process> below(const std::vector<Process>& processes, pid_t root,
                           const std::set<pid_t>& skip = {});
struct Tree {
    std::vector<Process> living;
    // The process groups of sessions the tree made (setsid). Every process of such a session descends
    // from the tree's process that made it, so signalling the whole group reaches nothing else, and it
    // reaches at once what a scan would chase: the kernel signals a group in one pass and fails a fork
    // under way. Learnt from the living and from this process's zombies (a forker's exited generations),
    // since the living one of a fast forker is the one a scan misses.
    std::set<pid_t> groups;
};
// Every living process below this one (a subreaper adopts what its descendants orphan), except the
// subtrees of the children in `skip`, and the groups of the sessions they made.
Tree tree_below_self(const std::set<pid_t>& skip = {});
// Signals every group in `groups` as a whole; forgets those that are empty (ESRCH), so that a group id is
// never signalled after it could have been reused. Returns the groups signalled.
std::set<pid_t> signal_groups(std::set<pid_t>& groups, int signal);

// Whether a process with this pid exists (a zombie counts as gone).
bool alive(pid_t pid);
// Reaps this process's zombie children, except `keep` (whose starter waits for it itself). The judge is
// a subreaper: every process of the candidate's tree that exits after its parent becomes its zombie.
int reap_zombie_children(pid_t keep);

} // namespace pkbw::engine::process_scan
