#include "pkbw/core/perf_stats.h"

#include "pkbw/core/random.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pkbw {

double percentile(std::vector<double> values, double q) {
    if (values.empty()) {
        return 0;
    }
    std::sort(values.begin(), values.end());
    const double position = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
    const auto lower = static_cast<std::size_t>(std::floor(position));
    const auto upper = std::min(lower + 1, values.size() - 1);
    const double fraction = position - static_cast<double>(lower);
    return values[lower] + (values[upper] - values[lower]) * fraction;
}

SampleSummary summarize(const std::vector<double>& values) {
    SampleSummary s;
    s.count = values.size();
    if (values.empty()) {
        return s;
    }
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    s.min = sorted.front();
    s.max = sorted.back();
    s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
    s.median = percentile(sorted, 50);
    s.p5 = percentile(sorted, 5);
    s.p95 = percentile(sorted, 95);
    double squares = 0;
    for (double v : sorted) {
        squares += (v - s.mean) * (v - s.mean);
    }
    s.stddev = sorted.size() > 1 ? std::sqrt(squares / static_cast<double>(sorted.size() - 1)) : 0;
    return s;
}

std::vector<double> slowest_rank_per_iteration(const std::vector<std::vector<double>>& samples) {
    if (samples.empty()) {
        return {};
    }
    std::size_t count = samples.front().size();
    for (const auto& rank : samples) {
        count = std::min(count, rank.size());
    }
    std::vector<double> slowest(count, 0.0);
    for (const auto& rank : samples) {
        for (std::size_t i = 0; i < count; ++i) {
            slowest[i] = std::max(slowest[i], rank[i]);
        }
    }
    return slowest;
}

std::vector<BlockSide> block_order(int pairs) {
    std::vector<BlockSide> order;
    for (int p = 0; p < pairs; ++p) {
        const bool reference_first = p % 2 == 0;
        order.push_back(reference_first ? BlockSide::Reference : BlockSide::Candidate);
        order.push_back(reference_first ? BlockSide::Candidate : BlockSide::Reference);
    }
    return order;
}

std::string verdict_name(Verdict verdict) {
    switch (verdict) {
    case Verdict::Faster:
        return "faster";
    case Verdict::Slower:
        return "slower";
    case Verdict::WithinNoise:
        return "within noise";
    }
    return "within noise";
}

namespace {

double median_of(std::vector<double> values) {
    return percentile(std::move(values), 50);
}

std::vector<double> concat(const std::vector<const TimedBlock*>& blocks) {
    std::vector<double> all;
    for (const auto* block : blocks) {
        all.insert(all.end(), block->samples.begin(), block->samples.end());
    }
    return all;
}

} // namespace

SpeedupEstimate estimate_speedup(const std::vector<TimedBlock>& blocks, int bootstrap_rounds,
                                 std::uint64_t seed, double noise_floor) {
    std::vector<const TimedBlock*> reference, candidate;
    for (const auto& block : blocks) {
        (block.side == BlockSide::Reference ? reference : candidate).push_back(&block);
    }
    SpeedupEstimate estimate;
    const auto all_reference = concat(reference);
    const auto all_candidate = concat(candidate);
    estimate.reference = summarize(all_reference);
    estimate.candidate = summarize(all_candidate);
    if (all_reference.empty() || all_candidate.empty() || estimate.candidate.median <= 0) {
        return estimate;
    }
    estimate.speedup = estimate.reference.median / estimate.candidate.median;

    // Resample whole blocks (not iterations): iterations inside a block are correlated, blocks are
    // the independent units of this design.
    const CounterRng rng(seed, 0xB007);
    std::vector<double> ratios;
    ratios.reserve(static_cast<std::size_t>(bootstrap_rounds));
    std::uint64_t draw = 0;
    std::vector<const TimedBlock*> pick_reference(reference.size()), pick_candidate(candidate.size());
    for (int round = 0; round < bootstrap_rounds; ++round) {
        for (auto& p : pick_reference) {
            p = reference[static_cast<std::size_t>(
                rng.integer(draw++, 0, static_cast<std::int64_t>(reference.size())))];
        }
        for (auto& p : pick_candidate) {
            p = candidate[static_cast<std::size_t>(
                rng.integer(draw++, 0, static_cast<std::int64_t>(candidate.size())))];
        }
        const double c = median_of(concat(pick_candidate));
        if (c > 0) {
            ratios.push_back(median_of(concat(pick_reference)) / c);
        }
    }
    estimate.ci_low = percentile(ratios, 2.5);
    estimate.ci_high = percentile(ratios, 97.5);
    if (estimate.ci_low > 1.0 + noise_floor) {
        estimate.verdict = Verdict::Faster;
    } else if (estimate.ci_high < 1.0 / (1.0 + noise_floor)) {
        estimate.verdict = Verdict::Slower;
    } else {
        estimate.verdict = Verdict::WithinNoise;
    }
    return estimate;
}

PkbSpeedup pkb_speedup(const std::vector<std::vector<double>>& reference_per_rank,
                       const std::vector<std::vector<double>>& candidate_per_rank) {
    auto max_mean = [](const std::vector<std::vector<double>>& per_rank) {
        double worst = 0;
        for (const auto& samples : per_rank) {
            if (!samples.empty()) {
                worst = std::max(worst, std::accumulate(samples.begin(), samples.end(), 0.0) /
                                            static_cast<double>(samples.size()));
            }
        }
        return worst;
    };
    PkbSpeedup result;
    result.reference_ms = max_mean(reference_per_rank);
    result.candidate_ms = max_mean(candidate_per_rank);
    result.speedup = result.candidate_ms > 0 ? result.reference_ms / result.candidate_ms : 0;
    return result;
}

double bus_bandwidth_factor(CollectiveKind kind, int ranks) {
    const double n = ranks;
    switch (kind) {
    case CollectiveKind::AllReduce:
        return ranks > 0 ? 2.0 * (n - 1) / n : 0;
    case CollectiveKind::AllGather:
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllToAll:
    case CollectiveKind::Gather:
    case CollectiveKind::Scatter:
        return ranks > 0 ? (n - 1) / n : 0;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
        return 1.0;
    case CollectiveKind::None:
        return 0;
    }
    return 0;
}

Bandwidth bandwidth(CollectiveKind kind, int ranks, double bytes, double milliseconds) {
    Bandwidth bw;
    if (milliseconds <= 0) {
        return bw;
    }
    bw.algbw_gbps = bytes / (milliseconds * 1e-3) / 1e9;
    bw.busbw_gbps = bw.algbw_gbps * bus_bandwidth_factor(kind, ranks);
    return bw;
}

} // namespace pkbw
