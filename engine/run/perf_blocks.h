// pkbw's figure from its timed blocks, for one protocol's series ("pkbw": the launched blocks; "graph":
// the blocks replayed from CUDA graphs): the judge's floor under each side, the slowest rank per block,
// throttled blocks dropped, and the speedup replicated over the launches (docs/perf.md).
#pragma once

#include "pkbw/core/perf_stats.h"

#include <map>
#include <string>
#include <vector>

namespace pkbw::cli {

struct PerfSeries {
    std::string protocol; // "pkbw" or "pkb"
    std::string side;     // "reference", "candidate", "bare_nccl"
    int block = 0;
    std::map<int, std::vector<double>> per_rank; // rank -> samples (ms)
    int launch = 0;                              // which independent launch of the pair (run.cpp)
    // pkbw's blocks: per rank, the judge's time of the block and its calls (the floor under the candidate).
    std::map<int, double> judge_ms;
    std::map<int, int> calls;
    bool throttled = false; // a rank's device reported a clock slowdown in it
};

struct BlockFigures {
    bool has_estimate = false;     // blocks of both sides
    ReplicatedEstimate replicated; // over the launches; .pooled is the figure
    int launches = 0;              // launches with blocks of both sides
    int throttled_blocks = 0;      // dropped: a clock slowdown during the block
    int candidate_blocks = 0;      // the candidate's blocks timed, over every launch
    int floored_blocks =
        0; // of them, raised to the judge's clock (its launch and rank's overhead beyond the reference's)
    // The most the judge's clock lets the candidate's time be below what its blocks took, per call (the
    // hold's tolerance over the calls; the median over the candidate's blocks): a
    // process that under-reports its own time gains at most this (docs/perf.md "The time").
    double judge_margin_call_ms = 0;
    // candidate / (candidate + judge_margin_call_ms), per call: the factor by which the pooled interval's
    // lower end was taken down for what the judge's clock cannot confirm (1: nothing).
    double unconfirmed_factor = 1;
    std::map<std::string, std::vector<double>> per_side; // side -> slowest-rank time per call of each block
};

BlockFigures estimate_blocks(const std::vector<PerfSeries>& series, const std::string& protocol,
                             const VerdictRule& rule);

} // namespace pkbw::cli
