// One rank's whole run: rendezvous, device, every trial (inputs, reference, candidate, compare),
// verdicts and outputs, reported as protocol events.
#pragma once

#include "event_sink.h"
#include "rank_config.h"

namespace pkbw::engine {

// Rank process exit codes (docs/engine.md).
inline constexpr int kRankExitOk = 0;
inline constexpr int kRankExitEnvironment = 3;
inline constexpr int kRankExitSolutionBroke = 4;
inline constexpr int kRankExitInternal = 5;

// Runs the rank and returns its exit code. Failures are reported through `events` before returning.
int run_rank(const RankConfig& config, EventSink& events);

} // namespace pkbw::engine
