// The timed loops, run in the process that owns the calls: the judge for the reference and the bare
// NCCL loop, the candidate process for the candidate (its kernels run there). Each block is
// bracketed by a device-wide synchronisation on the host clock, so the caller can tell whether the
// events saw all the work (core/timing_checks.h).
#pragma once

#include "device.h"

#include <functional>
#include <vector>

namespace pkbw::engine {

class Rendezvous;

struct BlockTiming {
    std::vector<double> samples_ms;
    double span_ms = 0;  // first mark to last mark on the timed stream
    double host_ms = 0;  // host clock, just before the first mark to after the device-wide sync
    double whole_ms = 0; // the whole request in the process that ran it: barrier and warm-up too
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

private:
    Device& device_;
    Rendezvous& rendezvous_;
};

} // namespace pkbw::engine
