// pkbw's timing protocol (docs/perf.md): the judge measures, the workers only compute. Each side's
// blocks run in a worker process (the candidate's own process; the reference's timing worker, the
// same program with the reference library), timed by the judge's clock from request to reply, less a
// round trip calibrated on the trusted worker. Every call of a block reads fresh inputs of its own
// (timing_inputs.h) and writes an output slot of its own, poisoned before the block, and every slot
// of the candidate is checked against the reference's slot for the same inputs. The candidate's
// process tree is frozen whenever its own block is not running.
#pragma once

#include "cpu_placement.h"
#include "perf_runner.h"
#include "scheduling_guard.h"
#include "timing_inputs.h"
#include "worker_stillness.h"

#include <functional>
#include <string>

namespace pkbw::engine {

struct CheckedTimingContext {
    const PerfContext& perf;
    SharedBuffers& shared;
    double atol = kPkbTolerance, rtol = kPkbTolerance;
    TimedWorker* reference = nullptr; // absent in a dryrun of the candidate
    TimedWorker* candidate = nullptr; // absent in a dryrun of the reference
    TimingInputs* inputs = nullptr;   // agreed and drawn while the eval ran
    // The judge's own scheduling, taken before any worker started: given back to the reference's
    // worker and the judge before each reference block (scheduling_guard.h). Null: not guarded.
    const ThreadScheduling* scheduling = nullptr;
    // Where this judge and its workers run while blocks are timed (cpu_placement.h). Null: as started.
    const CpuPlacement* placement = nullptr;
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
