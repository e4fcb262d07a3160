// The candidate's side of a timed block, seen from its judge: the calls and the timed loop run in the
// candidate process (core/candidate_protocol.h); the judge times the request on its own clock and
// watches the candidate's CPU after it (docs/perf.md, "What the timing cannot miss").
#pragma once

#include "candidate_process.h"
#include "perf_runner.h"

#include <memory>

namespace pkbw::engine {

class Rendezvous;

// `judges`: the judges' rendezvous, to align the judges' clocks before each request.
std::unique_ptr<TimedSide> make_remote_side(CandidateProcess& process, Rendezvous& judges,
                                            const TimingBuffers& buffers);

} // namespace pkbw::engine
