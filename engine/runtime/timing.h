// The timed loops, run in the process that owns the calls: a worker process for each side's blocks
// (the candidate's process, the reference's timing worker; their judge times each request on its own
// clock), the judge itself for the bare NCCL loop and calibration. A block ends with a device-wide
// synchronisation, so a reply comes after all of the block's device work.
#pragma once

#include "device.h"

#include <functional>
#include <vector>

namespace pkbw::engine {

class Rendezvous;

struct BlockTiming {
    std::vector<double> samples_ms;
    double span_ms = 0; // first mark to last mark on the timed stream
    double host_ms = 0; // host clock, just before the first mark to after the device-wide sync
    // Host clock, just before the first mark to after the last call was queued (no synchronisation): where
    // it is about the span, the host's launches set the pace, not the device (docs/perf.md).
    double enqueue_ms = 0;
    // The worker's time of the whole request, received to answered (set by the worker's loop, not here).
    double worker_ms = 0;
    int calls = 0;
};

// Queues one call using input set `copy`; throws when the solution failed.
using CallFunction = std::function<void(int copy)>;

class TimedCalls {
public:
    TimedCalls(Device& device, Rendezvous& rendezvous)
        : device_(device)
        , rendezvous_(rendezvous) {}

    // PKB: warmup calls, then one event before and one after each of `iterations` calls, with no host
    // synchronisation in between (utils/performance.py).
    BlockTiming pkb_series(const CallFunction& call, int copies, int warmup, int iterations);
    // pkbw: ranks start the block together; each sample brackets `repeat` calls (optionally after a
    // cache flush, kept outside the sample but inside the span).
    BlockTiming pkbw_block(const CallFunction& call, int copies, int iterations, int repeat, bool flush,
                           int& next_copy);
    // pkbw's checked block (docs/perf.md): `calls` calls, call k on input set and output slot k, back to
    // back, one event before and after each; optionally after a barrier of the worker's group. With no
    // calls it is the round trip the judge calibrates (barrier and synchronisation only).
    BlockTiming checked_block(const CallFunction& call, int calls, bool barrier);
    // The same block replayed from its graph (Device::capture): one launch queues all `calls` calls, so
    // the span is the device's time of them back to back; no per-call samples (no event between calls).
    BlockTiming graph_block(CapturedCalls& graph, int calls, bool barrier);

private:
    Device& device_;
    Rendezvous& rendezvous_;
};

} // namespace pkbw::engine
