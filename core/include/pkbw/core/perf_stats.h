// Timing statistics for perf runs: per-iteration samples reduced across ranks, robust summaries,
// a speedup with a bootstrap confidence interval over blocks, a verdict, nccl-tests' bandwidth
// formulas, and the plausibility floor (the least time a problem's work can take on a machine).
// Pure functions, tested on synthetic samples with known answers.
#pragma once

#include "pkbw/core/problem.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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
// `reference_first` false: BAAB BAAB... (launches alternate, so that no side always goes first).
std::vector<BlockSide> block_order(int pairs, bool reference_first = true);

// One side's timed block, already reduced across ranks (slowest rank per iteration).
struct TimedBlock {
    BlockSide side = BlockSide::Reference;
    int index = 0;               // position in the run's block order
    std::vector<double> samples; // ms per iteration
};

// A pair's verdict (docs/perf.md "Verdicts"): faster or slower only when the interval lies on one side
// of 1 and the point estimate is beyond the band; same when the whole interval lies inside the band;
// ambiguous otherwise (the data cannot tell a difference from noise).
enum class Verdict { Faster, Slower, Same, Ambiguous };
std::string verdict_name(Verdict verdict); // "faster", "slower", "same", "ambiguous"
std::optional<Verdict> verdict_from_name(std::string_view name);
// The store's number for a verdict (perf_summaries "verdict"): 1 faster, -1 slower, 0 same, 2 ambiguous.
// Runs stored before the four verdicts wrote 0 for "within noise": verdict_from_code(0) reads as same,
// which is what a reader asks of them ("not faster").
double verdict_code(Verdict verdict);
Verdict verdict_from_code(double code);

// What "a difference" means for a pair: the band is max(min_effect, noise_floor) as a fraction (0.05:
// within x1/1.05..x1.05 is no difference). noise_floor comes from A/A runs of the problem (the reference
// timed against itself, `pkbw perf --solution reference`): the furthest its interval reached from 1.
struct VerdictRule {
    double min_effect = 0.05;
    double noise_floor = 0;
    std::string floor_source; // where noise_floor came from ("" when not measured)
    double band() const { return min_effect > noise_floor ? min_effect : noise_floor; }
};
Verdict classify_speedup(double speedup, double ci_low, double ci_high, const VerdictRule& rule);

// fast_p counts a pair as faster than p only when its interval clears p (ci_low > p).
inline bool clears(double ci_low, double p) {
    return ci_low > p;
}

struct SpeedupEstimate {
    double speedup = 0;             // median(reference) / median(candidate) over all iterations
    double ci_low = 0, ci_high = 0; // 95% bootstrap interval (blocks resampled with replacement)
    Verdict verdict = Verdict::Ambiguous;
    SampleSummary reference, candidate;
};

// One launch's blocks: the speedup, its interval over blocks (the within-launch diagnostic) and a
// verdict under `rule`.
SpeedupEstimate estimate_speedup(const std::vector<TimedBlock>& blocks, int bootstrap_rounds = 2000,
                                 std::uint64_t seed = 1, const VerdictRule& rule = {});

// What moves a pair's speedup from one run to the next that the launches of one run cannot see: the
// device settles into a state for minutes (on the H200 a launch's device time steps between modes that
// persist across the launches of a run), so launches of one run agree more than launches of different
// runs. Measured on the H200 (W=1) as the between-run sd left over after the launches' own spread (one-way
// analysis of 62 runs of 7 pairs, three launches each): 0.45% (problem 12), 0.24% (problem 1), none
// elsewhere (a later batch of 70 runs: 0.71% on 12, 0.80% on 73, with every interval covering); the
// pooled interval adds 0.5% sd of the log speedup in quadrature
// (docs/perf.md "Variation the launches cannot see"). A run's launches cannot measure it, and more
// launches do not shrink it; tools/gpu/replicate.sh measures it anew on another machine.
inline constexpr double kUnseenRunSd = 0.005;

// Several independent launches of the same pair (fresh processes, buffer offsets and side order
// randomised): each launch's speedup is one replicate. The speedup is the geometric mean over launches;
// its 95% interval is Student's t over the launches' log speedups (L-1 degrees of freedom), never
// narrower than the launches' own intervals say (their pooled sd over sqrt(L), times the normal's 1.96:
// that sd comes from each launch's blocks, not from the L launches; docs/perf.md "Replication"), and
// widened by `unseen_run_sd` (the variation between runs that one run's launches cannot see, added in
// quadrature as 1.96 sd of the log). One launch: its own interval, and `replicated` false.
struct ReplicatedEstimate {
    SpeedupEstimate pooled;                // speedup, interval and verdict over launches
    std::vector<SpeedupEstimate> launches; // each launch's own estimate
    double between_sd = 0;                 // sd of the launches' log speedups
    double within_sd = 0;                  // typical sd of one launch's log speedup (from its interval)
    bool between_dominates = false;        // between-launch variance exceeds twice the within
    double unseen_run_sd = 0;              // the allowance the interval took for it (0: one launch)
    bool replicated = false;               // at least two launches
};
ReplicatedEstimate estimate_replicated(const std::vector<std::vector<TimedBlock>>& launches,
                                       const VerdictRule& rule = {}, int bootstrap_rounds = 2000,
                                       std::uint64_t seed = 1, double unseen_run_sd = kUnseenRunSd);

// The two-sided 97.5% quantile of Student's t with `degrees` degrees of freedom (1.96 for many).
double student_t975(int degrees);

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

// Peak rates of one GPU of the machine a run timed on, for the plausibility floor (docs/perf.md
// "Plausibility floor"). A rate of 0 is unknown: its term is left out of the floor.
struct MachinePeaks {
    std::string source;        // where the rates come from, for messages ("documented NVIDIA H200 rates")
    double memory_gbps = 0;    // device memory bandwidth (GB/s, 1e9 bytes)
    double busbw_gbps = 0;     // bus bandwidth (nccl-tests' busbw) the problem's collective can reach
    std::string busbw_source;  // "calibrated", "measured peer copy", ...
    double compute_tflops = 0; // dense tensor-core peak (TFLOP/s)
};

// The documented rates of a device by its CUDA name, or nullopt when pkbw has none for it. Only the
// H200 for now (the GPU this project times on), from shared/reference/gpu-facts.md: measured HBM
// copy 4.2 TB/s, measured peer copy 374 GB/s per direction, dense bf16 989 TFLOP/s.
std::optional<MachinePeaks> documented_peaks(std::string_view device_name);

// A time below the floor is not trusted, but the floor is soft: the work model counts bytes as
// device-memory traffic that L2 may serve, a candidate may compute in FP8 (twice bf16's peak), a
// custom collective may beat the calibrated NCCL busbw, and the measured rates are below the specs
// (4.8 TB/s, 450 GB/s). Halving the physical minimum keeps every such legitimate time above the floor.
inline constexpr double kPlausibilitySafetyFactor = 0.5;

enum class FloorTerm { None, Memory, Compute, Communication };
std::string_view floor_term_name(FloorTerm term); // "none", "memory", "compute", "communication"

struct PlausibilityFloor {
    double floor_ms = 0; // safety_factor x the largest term; 0: no floor (see `note`)
    FloorTerm term = FloorTerm::None;
    double memory_ms = 0;        // memory_bytes / memory bandwidth, before the safety factor
    double compute_ms = 0;       // flops / compute peak
    double communication_ms = 0; // collective_bytes x busbw factor / busbw peak (0 at one rank)
    double safety_factor = kPlausibilitySafetyFactor;
    std::string explanation; // the term that set it, e.g. "memory: 8388608 bytes at 4200 GB/s"
    std::string note;        // why there is no floor, when floor_ms is 0
};

// The least time one call of `work` (per rank) can take on a machine with `peaks`: each rank's
// memory traffic, compute and share of the collective run in parallel at best, so the floor is the
// largest of the three terms (never their sum), times `safety_factor`.
PlausibilityFloor plausibility_floor(const WorkModel& work, const MachinePeaks& peaks, int world_size,
                                     double safety_factor = kPlausibilitySafetyFactor);

// "candidate median X ms is below the plausibility floor Y ms (memory: ...): faster than this
// machine can go" when 0 < median_ms < floor, else nullopt.
std::optional<std::string> below_floor_warning(std::string_view side, double median_ms,
                                               const PlausibilityFloor& floor);

} // namespace pkbw
