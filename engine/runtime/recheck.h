// The re-check after timing (docs/perf.md, "What the timing cannot miss"): the candidate is called again
// with poisoned outputs on inputs it has not seen, and compared with the reference on the same inputs:
// new inputs at the addresses it was timed on (a result cached by pointer, or outputs it stopped
// writing, fail here), its timed inputs with the last element of the first floating-point input
// changed (a cache keyed by address and a cheap look at the contents fails here), and new inputs at
// new addresses.
#pragma once

#include "candidate_process.h"
#include "perf_runner.h"
#include "pkbw/core/outputs.h"
#include "rank_config.h"
#include "trial_buffers.h"

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pkbw::engine {

struct RecheckContext {
    const Problem& problem;
    const RankConfig& config;
    int rank;
    SharedBuffers& shared;
    Device& device;
    CandidateProcess& candidate;
    // Runs the reference on prepared buffers with these parameters: its outputs, or why it failed.
    std::function<std::pair<OutputSet, std::string>(TrialBuffers&, const std::map<std::string, double>&)>
        reference;
};

struct RecheckResult {
    std::string variant; // timed_addresses, one_element_changed, new_addresses
    std::string status;  // pass, mismatch, error (core/status.h)
    std::string message;
};

// Throws CandidateFailure when the candidate process broke (anything but the solution's own failure).
std::vector<RecheckResult> recheck_after_timing(const RecheckContext& context, TimingBuffers& timed);

} // namespace pkbw::engine
