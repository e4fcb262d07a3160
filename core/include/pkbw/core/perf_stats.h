// Timing statistics for perf runs: per-iteration samples reduced across ranks, robust summaries,
// a speedup with a bootstrap confidence interval over blocks, a verdict, and nccl-tests' bandwidth
// formulas. Pure functions, tested on synthetic samples with known answers.
#pragma once

#include "pkbw/core/problem.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pkbw {

struct SampleSummary {
    std::size_t count = 0;
    double mean = 0, median = 0, p5 = 0, p95 = 0, min = 0, max = 0, stddev = 0;
};

// Linear-interpolated percentile (q in [0, 100]) of `values` (copied and sorted).
double percentile(std::vector<double> values, double q);
SampleSummary summarize(const std::vector<double>& values);

// samples[rank][i]: the i-th timed iteration of one block on each rank. An iteration counts as its
// slowest rank's time; returns the per-iteration maxima (length = the shortest rank's count).
std::vector<double> slowest_rank_per_iteration(const std::vector<std::vector<double>>& samples);

enum class BlockSide { Reference, Candidate };

// The order in which timed blocks run: reference and candidate alternate as ABBA ABBA..., so that a
// linear drift (clocks, temperature) affects both sides equally. `pairs` blocks of each side.
std::vector<BlockSide> block_order(int pairs);

// One side's timed block, already reduced across ranks (slowest rank per iteration).
struct TimedBlock {
    BlockSide side = BlockSide::Reference;
    int index = 0;               // position in the run's block order
    std::vector<double> samples; // ms per iteration
};

enum class Verdict { Faster, Slower, WithinNoise };
std::string verdict_name(Verdict verdict);

struct SpeedupEstimate {
    double speedup = 0;             // median(reference) / median(candidate) over all iterations
    double ci_low = 0, ci_high = 0; // 95% bootstrap interval (blocks resampled with replacement)
    Verdict verdict = Verdict::WithinNoise;
    SampleSummary reference, candidate;
};

// `noise_floor` widens "within noise": a speedup whose interval lies inside [1/(1+f), 1+f] is
// reported as within noise even when the interval excludes 1 (default 1%).
SpeedupEstimate estimate_speedup(const std::vector<TimedBlock>& blocks, int bootstrap_rounds = 2000,
                                 std::uint64_t seed = 1, double noise_floor = 0.01);

// PKB's figure: per-rank mean of each side, speedup = max over ranks of the reference mean / max
// over ranks of the candidate mean.
struct PkbSpeedup {
    double reference_ms = 0, candidate_ms = 0, speedup = 0;
};
PkbSpeedup pkb_speedup(const std::vector<std::vector<double>>& reference_per_rank,
                       const std::vector<std::vector<double>>& candidate_per_rank);

// nccl-tests' bandwidths (docs/perf.md): algbw = S / t, busbw = algbw * factor(collective, n).
// GB = 1e9 bytes. `bytes` is nccl-tests' S for that collective.
double bus_bandwidth_factor(CollectiveKind kind, int ranks);
struct Bandwidth {
    double algbw_gbps = 0, busbw_gbps = 0;
};
Bandwidth bandwidth(CollectiveKind kind, int ranks, double bytes, double milliseconds);

} // namespace pkbw
