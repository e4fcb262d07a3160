// A timed worker and the stillness it keeps outside its own blocks (docs/perf.md, pkbw's protocol).
#pragma once

#include "candidate_process.h"

#include <string>

namespace pkbw::engine {

// One side's worker. The candidate's is untrusted: frozen outside its own blocks, its tree's CPU
// measured while frozen, the GPU probed around it.
struct TimedWorker {
    std::string side; // "reference" or "candidate"
    CandidateProcess* process = nullptr;
    bool untrusted = false;
};

// Keeps a worker's process tree frozen (ProcessContainer) from construction to destruction, but
// between thaw() and freeze(): its own blocks. Both sides' workers are frozen outside their blocks, so
// that each block's clock can start before the thaw and both pay the same wake-up; the candidate's must
// be, so that it cannot run while the reference is timed or see its next inputs early. Requests that
// are not timed (mapping buffers, defining views, unmapping) need the process running: they happen
// outside a stillness's life. A freeze that fails is counted and the run says so.
class WorkerStillness {
public:
    explicit WorkerStillness(TimedWorker* worker); // null: nothing to freeze
    ~WorkerStillness();
    WorkerStillness(const WorkerStillness&) = delete;
    WorkerStillness& operator=(const WorkerStillness&) = delete;

    void freeze();
    // `confirm`: wait until the tree is seen running again (the cgroup's events, or each process's
    // state); false: ask and return (the request that follows waits on the tree anyway).
    void thaw(bool confirm = true);
    bool failed() const { return failures_ > 0; }
    // CPU time of the worker's tree so far (ms): what a frozen tree must not use.
    double tree_cpu_ms() const;
    // tree_cpu_ms once two readings a little apart agree (at most ~10 ms of waiting): the cgroup's
    // cpu.stat may still be adding time the tree used before the freeze took hold.
    double settled_cpu_ms() const;

private:
    TimedWorker* worker_;
    bool frozen_ = false;
    int failures_ = 0;
};

} // namespace pkbw::engine
