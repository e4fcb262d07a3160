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
// Whether a process with this pid exists (a zombie counts as gone).
bool alive(pid_t pid);
// Reaps this process's zombie children, except `keep` (whose starter waits for it itself). The judge is
// a subreaper: every process of the candidate's tree that exits after its parent becomes its zombie.
int reap_zombie_children(pid_t keep);

} // namespace pkbw::engine::process_scan
