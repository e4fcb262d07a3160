// The judge's handle on its rank's candidate process (docs/engine.md, "Process layout"): starts
// pkbw-candidate in the sandbox and in a container of its own (containment.h) with a fresh environment
// and only the channel, maps the judge's buffers into it, forwards calls and timed blocks, and at the
// end makes sure nothing it started is left running.
#pragma once

#include "channel.h"
#include "containment.h"
#include "loopback.h"
#include "pkbw/solution.h"
#include "sandbox.h"
#include "shared_buffers.h"
#include "timing.h"

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace pkbw::engine {

struct CandidateLaunch {
    std::string program; // pkbw-candidate
    std::string library; // the compiled candidate (copied into the sandbox directory)
    std::string backend; // host | cuda
    int rank = 0, world_size = 1, local_rank = 0;
    int rendezvous_port = 0; // the candidates' own rendezvous
    // Rank 0: the socket listening on rendezvous_port, passed to the candidate as
    // PKBW_RDZV_LISTEN_FD (loopback.h says why). The judge closes its own copy.
    int rendezvous_listen_fd = -1;
    std::string rendezvous_token;
    std::string rendezvous_address = "127.0.0.1";
    std::string shm_prefix; // host symmetric memory segment names
    std::string trace_dir;  // set when tracing: the candidate's trace files go here
    std::map<std::string, double> params;
    bool sandbox = true; // PKBW_SANDBOX=off turns the filesystem rules off (reported)
    // Which side's library it serves: "candidate", or "reference" for the reference's timing worker
    // (perf times both sides the same way, in a process of their own; docs/perf.md).
    std::string side = "candidate";
    // Both ends poll the channel rather than sleep on it (cpu_placement.h): set for timed runs where
    // the machine has the cores.
    bool spin = false;
};

// The candidate process failed a request. `kind` is core/candidate_protocol.h's failure kind, or
// "died" when the process ended without answering (then `signal` / `exit_code` say how).
struct CandidateFailure : std::runtime_error {
    CandidateFailure(std::string_view kind_, const std::string& message, int signal_ = 0, int exit_code_ = -1)
        : std::runtime_error(message)
        , kind(kind_)
        , signal(signal_)
        , exit_code(exit_code_) {}
    std::string kind;
    int signal = 0;
    int exit_code = -1;
    std::string side = "candidate"; // the worker that failed: candidate, or reference (its timing worker)
};

// What was left of the candidate's tree besides its own process, killed by kill_tree().
struct CandidateLeftovers {
    std::vector<ProcessInfo> killed;    // each was running and is gone (at most ProcessContainer::kMaxNamed)
    int count = 0;                      // processes found left, at least (killed may name fewer)
    std::vector<ProcessInfo> survivors; // still running: they could not be killed
    std::vector<pid_t> groups;          // process groups killed whole, none of their processes seen
};

class CandidateProcess {
public:
    // Starts the process and sends its setup; it joins the candidates' rendezvous and loads the
    // library while the judge opens its own device. Throws CandidateFailure.
    explicit CandidateProcess(const CandidateLaunch& launch);
    // Waits until it is ready; from then on its calls use `buffers`. Throws CandidateFailure.
    void wait_ready(SharedBuffers& buffers);
    ~CandidateProcess();
    CandidateProcess(const CandidateProcess&) = delete;
    CandidateProcess& operator=(const CandidateProcess&) = delete;

    pid_t pid() const { return pid_; }
    const std::string& side() const { return side_; }
    const Sandbox& sandbox() const { return *sandbox_; }
    const ProcessContainer& container() const { return *container_; }
    // Another worker of this judge is not part of this one's tree: neither frozen with it (signals) nor
    // killed by its sweep of the judge's descendants.
    void exclude_from_tree(pid_t pid) {
        container_->exclude(pid);
        siblings_.insert(pid);
    }
    const std::string& sandbox_dir() const { return directory_; }

    // One call on these views (every pointer must lie in a SharedBuffers allocation). The candidate
    // synchronises its device before answering.
    // `output_lengths`: the views' length slots (variable-length outputs), null when none is variable.
    void call(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs,
              const std::map<std::string, double>& params, const std::int64_t* output_lengths = nullptr);
    // A view set the timed requests refer to by id.
    int define_views(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs,
                     const std::int64_t* output_lengths = nullptr);
    // `params`: the problem's for the views' inputs; the worker keeps the last it was given (the eval's
    // last trial's), which differ where a problem's parameters change with the trial (81's counts).
    BlockTiming pkb_series(const std::vector<int>& views, const std::map<std::string, double>& params,
                           int warmup, int iterations);
    // One checked block: call k on view set views[k] (core/candidate_protocol.h kTimedCalls). The
    // caller times the request on its own clock; the reply's samples are the process's own account.
    BlockTiming timed_calls(const std::vector<int>& views, const std::map<std::string, double>& params,
                            bool barrier);
    // The same block replayed from the process's CUDA graph of it (kGraphCalls): the timing, no samples;
    // or, where the calls could not be captured, std::nullopt and `why` says so.
    // Captures the graph of a block of these views and params without running it: false, and `why`,
    // where the calls cannot be captured.
    bool capture_graph(const std::vector<int>& views, const std::map<std::string, double>& params,
                       std::string& why);
    std::optional<BlockTiming> graph_calls(const std::vector<int>& views,
                                           const std::map<std::string, double>& params, bool barrier,
                                           std::string& why);
    void trace(int views, int iterations);

    // CPU time of the process (all threads) in ms; < 0 when it is gone.
    double cpu_ms() const;
    int threads() const;

    // The candidate's whole process tree (its process and whatever it started, in any session): stopped
    // and resumed together (false when not every process stopped or resumed within timeout_ms), and its
    // CPU time so far in ms (ProcessContainer::cpu_ms says what the fallback misses).
    bool freeze(int timeout_ms);
    bool thaw(int timeout_ms);
    double tree_cpu_ms() const;

    // Asks it to leave without waiting (it flushes its trace and exits; the judge tears down meanwhile).
    void request_quit();
    // Asks it to leave (unless asked already), waits (bounded), kills it if needed, then kills and
    // returns every process it left behind (kill_tree).
    CandidateLeftovers finish();
    // Kills the candidate's tree (its container, then, as a second sweep, any descendant of the judge,
    // its subreaper, that left the container) and reports what it killed besides the candidate process.
    CandidateLeftovers kill_tree();

private:
    // The constructor's forked child: into the container and the sandbox, the channel (and the
    // rendezvous listener) at their numbers, every other descriptor closed, then exec. Only
    // async-signal-safe calls; never returns (exit 125 refused by the sandbox, 126 orphaned, 127).
    [[noreturn]] void exec_in_child(const CandidateLaunch& launch, int child_fd, char* const argv[],
                                    char* const envp[], pid_t parent);
    // The first message on the channel: what to load and where it runs.
    void send_setup(const CandidateLaunch& launch, const std::filesystem::path& library);
    // One request and its reply; a failure carries this worker's side.
    nlohmann::json request(const nlohmann::json& message, const std::vector<int>& fds = {});
    nlohmann::json exchange(const nlohmann::json& message, const std::vector<int>& fds);
    nlohmann::json describe(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs,
                            const std::int64_t* output_lengths);
    // Maps the view's buffer into the candidate if it is not yet; returns where the view lies in it.
    SharedBuffers::Location ensure_mapped(const TensorView& view);
    SharedBuffers::Location ensure_mapped(const void* data, std::size_t bytes, const std::string& name);
    [[noreturn]] void died(const std::string& during);
    void unmap(int id);

    SharedBuffers* buffers_ = nullptr;
    int listener_ = 0;
    std::string side_;
    std::string who_; // "candidate process" or "reference's timing worker", for messages
    bool quit_sent_ = false;
    Channel channel_;
    std::optional<Sandbox> sandbox_;
    std::optional<ProcessContainer> container_;
    std::set<pid_t> siblings_; // the judge's other workers (exclude_from_tree)
    std::string directory_;
    pid_t pid_ = -1;
    bool exited_ = false;
    int next_views_ = 1;
    std::set<int> mapped_;
};

} // namespace pkbw::engine
