#include "pkbw/core/perf_stats.h"

#include "pkbw/core/random.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

std::optional<MachinePeaks> documented_peaks(std::string_view device_name) {
    if (device_name.find("H200") == std::string_view::npos) {
        return std::nullopt;
    }
    // gpu-facts.md §2 and §8: the measured figures of this project's H200s. The specs (4.8 TB/s HBM3e,
    // 450 GB/s NVLink 4 per direction) are higher; kPlausibilitySafetyFactor covers the gap.
    MachinePeaks peaks;
    peaks.source = "documented " + std::string(device_name) + " rates";
    peaks.memory_gbps = 4200;
    peaks.busbw_gbps = 374;
    peaks.busbw_source = "measured peer copy";
    peaks.compute_tflops = 989;
    return peaks;
}

std::string_view floor_term_name(FloorTerm term) {
    switch (term) {
    case FloorTerm::None:
        return "none";
    case FloorTerm::Memory:
        return "memory";
    case FloorTerm::Compute:
        return "compute";
    case FloorTerm::Communication:
        return "communication";
    }
    return "none";
}

namespace {
std::string format(const char* pattern, double a, double b = 0, double c = 0) {
    char text[200];
    std::snprintf(text, sizeof(text), pattern, a, b, c);
    return text;
}
} // namespace

PlausibilityFloor plausibility_floor(const WorkModel& work, const MachinePeaks& peaks, int world_size,
                                     double safety_factor) {
    PlausibilityFloor floor;
    floor.safety_factor = safety_factor;
    if (peaks.memory_gbps <= 0 && peaks.compute_tflops <= 0 && peaks.busbw_gbps <= 0) {
        floor.note =
            "no floor: no peak rates known for " + (peaks.source.empty() ? "this machine" : peaks.source);
        return floor;
    }
    if (peaks.memory_gbps > 0 && work.memory_bytes > 0) {
        floor.memory_ms = work.memory_bytes / (peaks.memory_gbps * 1e9) * 1e3;
    }
    if (peaks.compute_tflops > 0 && work.flops > 0) {
        floor.compute_ms = work.flops / (peaks.compute_tflops * 1e12) * 1e3;
    }
    // busbw = S / t x factor, so the least time at a busbw peak is S x factor / peak. One rank moves
    // nothing over a link, whatever the factor (broadcast's is 1 at any n).
    const double factor = world_size > 1 ? bus_bandwidth_factor(work.collective, world_size) : 0;
    if (peaks.busbw_gbps > 0 && work.collective_bytes > 0 && factor > 0) {
        floor.communication_ms = work.collective_bytes * factor / (peaks.busbw_gbps * 1e9) * 1e3;
    }
    const double largest = std::max({floor.memory_ms, floor.compute_ms, floor.communication_ms});
    if (largest <= 0) {
        floor.note = "no floor: the work model gives no bytes or FLOPs that these peak rates bound";
        return floor;
    }
    floor.floor_ms = largest * safety_factor;
    if (largest == floor.memory_ms) {
        floor.term = FloorTerm::Memory;
        floor.explanation = format("memory: %.0f bytes at %.0f GB/s", work.memory_bytes, peaks.memory_gbps);
    } else if (largest == floor.compute_ms) {
        floor.term = FloorTerm::Compute;
        floor.explanation = format("compute: %.0f FLOP at %.0f TFLOP/s", work.flops, peaks.compute_tflops);
    } else {
        floor.term = FloorTerm::Communication;
        floor.explanation = std::string("communication: ") +
                            std::string(collective_kind_name(work.collective)) +
                            format(" of %.0f bytes, busbw factor %.3g, at %.0f GB/s busbw",
                                   work.collective_bytes, factor, peaks.busbw_gbps) +
                            (peaks.busbw_source.empty() ? "" : " (" + peaks.busbw_source + ")");
    }
    if (safety_factor != 1.0) {
        floor.explanation += format(", x%.3g margin", safety_factor);
    }
    return floor;
}

std::optional<std::string> below_floor_warning(std::string_view side, double median_ms,
                                               const PlausibilityFloor& floor) {
    if (floor.floor_ms <= 0 || median_ms <= 0 || median_ms >= floor.floor_ms) {
        return std::nullopt;
    }
    return std::string(side) +
           format(" median %.4g ms is below the plausibility floor %.4g ms", median_ms, floor.floor_ms) +
           " (" + floor.explanation + "): faster than this machine can go";
}

} // namespace pkbw
