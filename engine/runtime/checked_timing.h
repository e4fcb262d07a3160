// pkbw's timing protocol (docs/perf.md): the judge measures, the workers only compute. Each side's
// blocks run in a worker process (the candidate's own process; the reference's timing worker, the
// same program with the reference library), timed by the judge's clock from request to reply, less a
// round trip calibrated on the trusted worker. Every call of a block reads fresh inputs of its own
// (timing_inputs.h) and writes an output slot of its own, poisoned before the block, and every slot
// of the candidate is checked against the reference's slot for the same inputs. The candidate's
// process tree is frozen whenever its own block is not running.
#pragma once

#include "candidate_process.h"
#include "perf_runner.h"
#include "timing_inputs.h"

#include <functional>
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
    void thaw();
    bool failed() const { return failures_ > 0; }
    // CPU time of the worker's tree so far (ms): what a frozen tree must not use.
    double tree_cpu_ms() const;

private:
    TimedWorker* worker_;
    bool frozen_ = false;
    int failures_ = 0;
};

struct CheckedTimingContext {
    const PerfContext& perf;
    SharedBuffers& shared;
    double atol = 1e-2, rtol = 1e-2;
    TimedWorker* reference = nullptr; // absent in a dryrun of the candidate
    TimedWorker* candidate = nullptr; // absent in a dryrun of the reference
    TimingInputs* inputs = nullptr;   // agreed and drawn while the eval ran
    // Called after each timed block (the perf phase's progress).
    std::function<void(const std::string& side)> block_timed;
};

// The number of blocks run_checked_timing times (for the progress count known before the first).
int checked_timing_blocks(const PerfOptions& options, int sides);

// Times the present sides in ABBA blocks and sends a `timing_plan` event, a `perf_result` per block
// and a `timed_check` per candidate block. A worker that breaks throws CandidateFailure; a reference
// that fails throws pkbw::Error.
void run_checked_timing(const CheckedTimingContext& context, const PerfOptions& options);

} // namespace pkbw::engine
