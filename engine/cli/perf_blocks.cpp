#include "perf_blocks.h"

#include <algorithm>

namespace pkbw::cli {

BlockFigures estimate_blocks(const std::vector<PerfSeries>& series, const std::string& protocol,
                             const VerdictRule& rule) {
    BlockFigures out;
    // The judge's floor under each side, per launch and rank: a trusted block's overhead is its judge
    // time less the reference's own time of it, and the launch's typical overhead the median of its
    // reference blocks' (a scheduling spike in one block is not credited to every block: with the
    // largest, a loaded host handed a candidate that under-reports its clock all of one spike). Both
    // sides' time of a block is never taken below its judge time less that overhead: the floor treats
    // them alike, so a spike in either side's block costs that side alone, as the clock saw it.
    std::map<std::pair<int, int>, std::vector<double>> overheads; // (launch, rank) -> ms per block
    for (const auto& s : series) {
        if (s.protocol == protocol && s.side == "reference") {
            for (const auto& [rank, samples] : s.per_rank) {
                const auto j = s.judge_ms.find(rank);
                const auto k = s.calls.find(rank);
                if (j != s.judge_ms.end() && k != s.calls.end() && k->second > 0 && !samples.empty())
                    overheads[{s.launch, rank}].push_back(j->second - samples.front() * k->second);
            }
        }
    }
    std::map<std::pair<int, int>, double> overhead; // (launch, rank) -> the median overhead, ms
    for (const auto& [key, values] : overheads)
        overhead[key] = percentile(values, 50);
    std::vector<double> margins;
    // Blocks by launch; a block where a rank's clocks slowed down (power, thermal) is dropped, unless
    // that would leave a launch's side with fewer than half its blocks (then the launch stands as timed).
    std::map<int, std::vector<TimedBlock>> by_launch;
    std::map<int, std::vector<TimedBlock>> throttled_by_launch;
    std::map<std::string, std::vector<double>> per_side;
    for (const auto& s : series) {
        if (s.protocol != protocol) {
            continue;
        }
        std::vector<std::vector<double>> ranks;
        bool floored = false;
        for (const auto& [rank, samples] : s.per_rank) {
            std::vector<double> held = samples;
            const auto o = overhead.find({s.launch, rank});
            const auto j = s.judge_ms.find(rank);
            const auto k = s.calls.find(rank);
            if ((s.side == "candidate" || s.side == "reference") && o != overhead.end() && j != s.judge_ms.end() &&
                k != s.calls.end() && k->second > 0 && held.size() == 1) {
                const double floor = std::max(j->second - o->second, 0.0) / k->second;
                if (s.side == "candidate") {
                    // What a process that under-reports could hide per call: the overhead, at most its own time.
                    margins.push_back(std::min(held.front(), std::max(o->second, 0.0) / k->second));
                    floored = floored || floor > held.front() * 1.02;
                }
                held.front() = std::max(held.front(), floor);
            }
            ranks.push_back(std::move(held));
        }
        if (s.side == "candidate") {
            ++out.candidate_blocks;
            out.floored_blocks += floored ? 1 : 0;
        }
        const auto slowest = slowest_rank_per_iteration(ranks);
        per_side[s.side].insert(per_side[s.side].end(), slowest.begin(), slowest.end());
        if (s.side == "reference" || s.side == "candidate") {
            TimedBlock block{s.side == "reference" ? BlockSide::Reference : BlockSide::Candidate, s.block, slowest};
            (s.throttled ? throttled_by_launch : by_launch)[s.launch].push_back(std::move(block));
        }
    }
    out.judge_margin_call_ms = margins.empty() ? 0 : percentile(margins, 50);
    for (auto& [launch, dropped] : throttled_by_launch) {
        auto& kept = by_launch[launch];
        const auto count = [](const std::vector<TimedBlock>& blocks, BlockSide side) {
            return std::count_if(blocks.begin(), blocks.end(), [side](const TimedBlock& b) { return b.side == side; });
        };
        bool enough = true;
        for (BlockSide side : {BlockSide::Reference, BlockSide::Candidate}) {
            enough = enough && count(kept, side) >= count(dropped, side);
        }
        if (enough) {
            out.throttled_blocks += static_cast<int>(dropped.size());
        } else {
            kept.insert(kept.end(), dropped.begin(), dropped.end());
        }
    }
    out.per_side = per_side;
    if (per_side.count("reference") && per_side.count("candidate")) {
        std::vector<std::vector<TimedBlock>> launches;
        for (auto& [launch, blocks] : by_launch) {
            launches.push_back(blocks);
        }
        out.has_estimate = true;
        out.replicated = estimate_replicated(launches, rule);
        out.launches = static_cast<int>(launches.size());
    }
    return out;
}

} // namespace pkbw::cli
