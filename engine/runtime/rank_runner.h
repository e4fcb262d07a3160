// One rank's judge: rendezvous, device, the candidate's own process, every trial (inputs,
// candidate, reference, compare), timing and the re-check after it, reported as protocol events.
#pragma once

#include "event_sink.h"
#include "pkbw/core/rank_config.h"
#include "pkbw/core/status.h"

namespace pkbw::engine {

// Rank process exit codes (docs/engine.md), defined once in core/status.h.
inline constexpr int kRankExitOk = status::kExitOk;
inline constexpr int kRankExitEnvironment = status::kExitEnvironment;
inline constexpr int kRankExitSolutionBroke = status::kExitSolutionBroke;
inline constexpr int kRankExitInternal = status::kExitInternal;

// Runs the rank and returns its exit code. Failures are reported through `events` before returning.
int run_rank(const RankConfig& config, EventSink& events);

} // namespace pkbw::engine
