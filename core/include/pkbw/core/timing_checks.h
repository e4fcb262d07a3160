// What the judge plans and checks around each timed block (docs/perf.md, "What the timing cannot
// miss"): how many calls a block makes, and whether what a block measured can be trusted. Pure
// functions over what the judge measured, so that the thresholds are defined once and tested; the
// rank programs (C++ and Python) measure, the launcher turns the measurements into findings.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

// Every timed call reads inputs of its own and writes an output slot of its own, so that each one
// is checked against the reference: a block of `calls` calls needs that many input sets in shared
// memory and an output slot per side, and the judge keeps every block's fresh inputs (plus one set
// for the warm-up) in memory the candidate cannot see until its block. Each set is read by one call
// only, and the judge writes a buffer of 3x L2 after loading a block's inputs (--rotation copies), so
// every call reads its inputs from device memory, whatever the number of calls.
struct CheckedTimingPlan {
    int calls_per_block = 0;
    int pairs = 0; // blocks per side, in ABBA pairs
    // Pairs more of each side's blocks replayed as a CUDA graph (docs/perf.md "The graph figure"), on
    // input sets of their own; 0 where there is no graph figure (the host backend, --graph off).
    int graph_pairs = 0;
    std::size_t staging_bytes = 0; // judge-private: (groups() + 1) x calls x input bytes
    std::size_t slot_bytes = 0;    // shared: calls x (input bytes + 2 x output bytes)
    std::string reason;            // why calls_per_block is what it is, for the report
    std::size_t memory_budget = 0; // what staging and slots may take (0: no limit known)
    // The groups of input sets the blocks read (one per pair of either figure); the warm-up's is next.
    int groups() const { return pairs + graph_pairs; }
};

inline constexpr int kMaxCallsPerBlock = 128;

// `requested`: calls per block asked for (--iters, at most kMaxCallsPerBlock), lowered until staging and
// slots fit `memory_budget` (at least 1).
CheckedTimingPlan plan_checked_timing(std::size_t input_bytes, std::size_t output_bytes,
                                      std::size_t memory_budget, int requested, int pairs,
                                      int graph_pairs = 0);

// The graph figure's blocks of microsecond calls are longer than the launched ones: a replay of
// `passes` passes over the block's input sets, each pass on copies of the sets at addresses of their own
// and writing output slots of its own (docs/perf.md "The graph figure"). What a block's overhead differs
// by between the two sides' processes (0.01-0.14 ms on the H200) is what the judge cannot tell from a
// clock that under-reports; spread over kGraphBlockTargetMs of calls it is at most 2% of a call (at 4 ms
// an A/A launch read 0.975 where the devices agreed to 0.1%).
inline constexpr double kGraphBlockTargetMs = 8.0;
inline constexpr int kMaxGraphPasses = 64;

struct GraphPasses {
    int passes = 1;
    std::string reason; // for the report: why this many
};

// `call_ms`: the reference's device time per call in one replay of the block (its trusted worker's
// span / calls); `calls`: calls per block; `pass_bytes`: one pass's slots (calls x (input + 2 x output));
// `memory_left`: the budget less what staging and the launched slots take. Passes enough for
// kGraphBlockTargetMs, at most kMaxGraphPasses, at most what memory holds; 1 (the launched slots, no
// copies) where one pass already reaches the target or memory holds fewer than two.
GraphPasses plan_graph_passes(double call_ms, int calls, std::size_t pass_bytes, std::size_t memory_left);

// The judge's time per call for one block: its clock from request to reply, less the round trip it
// calibrated on the trusted reference worker (an empty block), over the calls. Never negative.
double judge_call_ms(double judge_ms, double round_trip_ms, int calls);

// One block as the judge saw it and as the worker reported it.
struct ReportedBlock {
    double reported_span_ms = 0; // the worker's events, first to last (its own account)
    double judge_ms = 0;         // the judge's clock, request to every rank's answer
    double round_trip_ms = 0;    // calibrated on the trusted worker
};

// The per-call samples a worker reports (device events around each call, in its own process) show the
// distribution; their span must agree with the judge's clock. Noise (preemption on a loaded host, a
// late wake-up) only ever adds to the judge's time, so the block that agrees best decides: when even
// it reports less than kSamplesFloor of what the judge saw (less an allowance), or every block reports
// more than the judge could have seen, the worker's clock is not the judge's: forged or slowed, or work
// on streams its events do not see. A distortion under about a quarter is not told from noise (the
// speedup never uses these samples). Returns the finding.
std::optional<std::string> samples_disagree(const std::vector<ReportedBlock>& blocks);

// The candidate's process tree used CPU while it was frozen (a reference block, the judge's
// preparation): the freeze missed a process. Returns the finding.
std::optional<std::string> cpu_while_frozen(double cpu_ms);

// A short kernel the judge times on its own device took far longer than it does on an idle device:
// another process's kernels held the GPU (the candidate's, while it should have been still).
// `where` says when: "while the reference was timed", "after the candidate's block returned".
std::optional<std::string> gpu_busy(double probe_us, double idle_probe_us, const std::string& where);

// One call of a block took most of the block by the worker's own samples, in at least half of a
// worker's blocks of kOneCallMinCalls calls or more: the mark of a candidate that computes several
// calls' work in one (it reads the whole block's inputs, which the judge loads before the block) and
// returns at once from the others. Each slot is still right and written before the reply, so the
// judge's time is honest, but no longer one call's; pkbw cannot check that each call's work happens in
// that call (docs/perf.md), so this is said, not judged. A heuristic on the samples a candidate
// reports (it may forge them). `blocks`: each block's per-call samples. Returns the finding.
std::optional<std::string> one_call_holds_the_block(const std::vector<std::vector<double>>& blocks);

// The allowances, exposed for docs and tests.
inline constexpr int kOneCallMinCalls = 8;
inline constexpr double kOneCallShare = 0.5;         // of the block's samples' sum
inline constexpr double kSamplesFloor = 0.8;         // of the judge's block time, in the best block
inline constexpr double kSamplesAllowanceMs = 0.3;   // barrier, first launch, final synchronisation
inline constexpr double kFrozenCpuAllowanceMs = 2.0; // the freeze's own bookkeeping
inline constexpr double kGpuBusyAllowanceUs = 250.0; // beyond the idle probe: a context switch

} // namespace pkbw
