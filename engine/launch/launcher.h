// Starts the W rank processes of one run in a new process group, wires their pipes, times each
// rank's phases against deadlines and ends the group as a whole: a hung rank (timeout), a dead one
// (crash) or SIGINT/SIGTERM to pkbw (interrupted) kill every rank, since the others would wait
// forever in a collective. docs/engine.md is the contract with the rank program.
#pragma once

#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw::cli {

// Seconds each phase may take on one rank, from the `phase` event that starts it ("start" runs from
// exec to `hello`; "exit" from `rank_done` to the process ending).
struct PhaseTimeouts {
    std::map<std::string, double> seconds;
    std::set<std::string> asked; // phases whose deadline the user gave (--timeout-<phase>, --timeout)
    // The inputs phase's deadline for a rank that draws `bytes` of inputs: the default grows with them
    // (docs/cli.md "Phase deadlines"); one the user gave stands.
    void fit_inputs(std::uint64_t bytes);
    static PhaseTimeouts defaults();
    static const std::vector<std::string>& phase_names(); // the phases with their own deadline
    double for_phase(const std::string& phase) const;     // unknown phases get "default"
    void scale(double factor);
};

struct LaunchSpec {
    std::filesystem::path program; // pkbw-rank
    std::vector<std::string> args; // e.g. {"--config", "<run_dir>/config.json"}
    int world_size = 1;
    std::filesystem::path run_dir; // receives rank_<r>.log
    bool cuda = false;             // adds NCCL_NVLS_ENABLE=0 unless the environment sets it
    PhaseTimeouts timeouts = PhaseTimeouts::defaults();
    std::map<std::string, std::string> extra_env;
    std::uint64_t max_log_bytes = 256ull << 20; // per rank log file; the rest is dropped (and said so)
    std::size_t max_forwarded_log_lines = 2000; // per rank, passed to on_log
    // > 0: RLIMIT_AS of each rank in bytes (the host backend: a candidate's huge allocation fails
    // inside its rank instead of pushing the machine into the OOM killer). Never for cuda: the CUDA
    // driver reserves far more address space than it uses.
    std::uint64_t address_space_limit = 0;
    // Rank 0 inherits the judges' rendezvous socket, already listening on MASTER_PORT, as
    // PKBW_RDZV_LISTEN_FD (docs/engine.md): the port is never free between the launcher's choice
    // and rank 0's server. Off for rank programs that bind MASTER_PORT themselves (PKB's Python
    // ranks: torch's TCPStore), which then get a port that was free when chosen.
    bool rank0_inherits_listener = true;
};

struct RankReport {
    int rank = 0;
    int pid = 0;
    std::string phase{status::kPhaseStart}; // the last phase entered
    int trial = -1;
    bool hello = false, done = false;
    bool exited = false;     // reaped
    int exit_code = -1;      // when it exited normally
    int signal = 0;          // when a signal ended it
    bool killed = false;     // ended by the launcher's SIGKILL
    std::string last_error;  // message of its last `error` event
    std::string stderr_tail; // last bytes of its stderr
    std::int64_t malformed_lines = 0;
    std::uint64_t log_bytes = 0;
    std::filesystem::path log_path;
    // The last `lines` lines of stderr_tail.
    std::string last_lines(int lines) const;
};

enum class LaunchEnd { Completed, Timeout, Crash, EnvironmentError, InternalError, Interrupted, SpawnFailed };
std::string_view launch_end_name(LaunchEnd end);

struct LaunchOutcome {
    LaunchEnd end = LaunchEnd::Completed;
    std::string message;            // names the rank(s), their phase and signal/exit code
    std::vector<int> culprit_ranks; // the ranks the message is about
    std::vector<RankReport> ranks;
    std::string token;       // PKBW_RDZV_TOKEN
    std::string segment_tag; // PKBW_SEGMENT_TAG: the host backend's shared-memory names
    int port = 0;            // MASTER_PORT
    double seconds = 0;
    int shm_segments_removed = 0;
    // Processes the ranks left behind (re-parented to pkbw, the subreaper: a candidate's grandchild
    // whose judge was killed), killed at the end: "pid P (command)".
    std::vector<std::string> leftovers;
};

class LaunchObserver {
public:
    virtual ~LaunchObserver() = default;
    // A valid control line.
    virtual void on_event(int /*rank*/, const protocol::Message& /*message*/) {}
    // A line a rank printed (stdout or stderr), up to max_forwarded_log_lines per rank.
    virtual void on_log(int /*rank*/, std::string_view /*stream*/, std::string_view /*line*/) {}
    virtual void on_rank_exit(const RankReport& /*report*/) {}
    // Each turn of the launcher's wait loop (at least every 250 ms while ranks run).
    virtual void on_wait() {}
};

// Runs the ranks to their end. Never leaves a process behind: on any exit path (exceptions
// included) the group is SIGKILLed and every child reaped. Install a SignalScope (signals.h) first
// for prompt SIGCHLD and interrupt handling.
LaunchOutcome launch_ranks(const LaunchSpec& spec, LaunchObserver& observer);

// 128 random bits from /dev/urandom as 32 hex digits.
std::string random_token();
// Removes /dev/shm/pkbw-<first 16 digits of the segment tag>* (the host backend's shared memory of the
// run's judges and workers); returns how many.
int remove_shm_segments(const std::string& segment_tag, const std::filesystem::path& shm_dir = "/dev/shm");
// Removes the segments of runs whose launcher is gone: names pkbw-<16 hex>-p<pid>-... (ranks started
// by pkbw carry its pid, PKBW_LAUNCHER_PID) where no process <pid> exists. A launcher killed with
// SIGKILL cannot clean up; its ranks die with it (PR_SET_PDEATHSIG) but a segment created and not
// yet unlinked by its ranks would stay. Returns how many were removed.
int remove_orphaned_shm_segments(const std::filesystem::path& shm_dir = "/dev/shm");
// The candidate processes' temporary directories, pkbw-candidate-<judge pid>-XXXXXX in `temp_dir`
// (engine/runtime/candidate_process.cpp): a judge removes its own, unless it is killed with SIGKILL
// (its destructors never run). These remove those of the given judges (after a run: every rank, all
// ended by then), and those whose judge no longer exists (at start: a launcher killed outright cleans up
// nothing); only directories of this user, never a link. Return how many were removed.
int remove_candidate_directories(const std::vector<int>& judges, const std::filesystem::path& temp_dir);
int remove_orphaned_candidate_directories(
    const std::filesystem::path& temp_dir = std::filesystem::temp_directory_path());
// The default RLIMIT_AS of a host rank: half of the machine's memory shared among `world_size` ranks,
// at least 4 GiB (0 when the memory size is unknown). The floor leaves room for what is virtual only
// (thread stacks, malloc arenas: rank 0 runs a rendezvous thread per peer).
std::uint64_t default_host_address_space_limit(int world_size);

} // namespace pkbw::cli
