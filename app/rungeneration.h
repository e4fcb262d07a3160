// What core's generation store knows about one run (Qt-free, read on a worker): the `pkbw generate`
// or `pkbw agent` generation that produced its candidate, the model exchanges behind it, and, for a
// run that judged an agent attempt, the whole trajectory of that problem (docs/generate.md).
#pragma once

#include "pkbw/core/generation_store.h"
#include "pkbw/core/perf_stats.h"
#include "pkbw/core/sweep_table.h"

#include <optional>
#include <vector>

namespace pkbw::app {

struct RunGeneration {
    std::optional<GenerationRow> generation; // none: the candidate did not come from pkbw generate/agent
    // generate: the exchanges that wrote this candidate (same sha256, else same path); agent: every
    // exchange of the run's problem in that generation, in order (the conversation).
    std::vector<ExchangeRow> exchanges;
    std::vector<AgentAttemptRow> trajectory; // agent only: the attempts of the run's problem
    // Per attempt of `trajectory`: the speedup as every table shows one, with the verdict, interval
    // and PKB's figure its run stored (none for attempts without a speedup; older runs lack some parts).
    std::vector<std::optional<PairOutcome>> trajectory_speedups;
    std::optional<int> attempt; // agent only: the attempt this run judged
    bool found() const { return generation.has_value(); }
};

// Stores older than schema 4 have no generations: an empty answer, not an error.
RunGeneration load_run_generation(const Store& store, const RunRecord& run);

} // namespace pkbw::app
