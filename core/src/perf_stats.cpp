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

std::vector<BlockSide> block_order(int pairs, bool reference_first) {
    std::vector<BlockSide> order;
    for (int p = 0; p < pairs; ++p) {
        const bool first = (p % 2 == 0) == reference_first;
        order.push_back(first ? BlockSide::Reference : BlockSide::Candidate);
        order.push_back(first ? BlockSide::Candidate : BlockSide::Reference);
    }
    return order;
}

std::string verdict_name(Verdict verdict) {
    switch (verdict) {
    case Verdict::Faster:
        return "faster";
    case Verdict::Slower:
        return "slower";
    case Verdict::Same:
        return "same";
    case Verdict::Ambiguous:
        return "ambiguous";
    }
    return "ambiguous";
}

std::optional<Verdict> verdict_from_name(std::string_view name) {
    for (Verdict v : {Verdict::Faster, Verdict::Slower, Verdict::Same, Verdict::Ambiguous}) {
        if (verdict_name(v) == name) {
            return v;
        }
    }
    return std::nullopt;
}

double verdict_code(Verdict verdict) {
    switch (verdict) {
    case Verdict::Faster:
        return 1;
    case Verdict::Slower:
        return -1;
    case Verdict::Same:
        return 0;
    case Verdict::Ambiguous:
        return 2;
    }
    return 2;
}

Verdict verdict_from_code(double code) {
    return code == 1    ? Verdict::Faster
           : code == -1 ? Verdict::Slower
           : code == 2  ? Verdict::Ambiguous
                        : Verdict::Same;
}

Verdict classify_speedup(double speedup, double ci_low, double ci_high, const VerdictRule& rule) {
    const double band = 1.0 + std::max(rule.band(), 0.0);
    if (!(speedup > 0) || !(ci_low > 0) || !(ci_high >= ci_low)) {
        return Verdict::Ambiguous;
    }
    if (ci_low >= 1.0 / band && ci_high <= band) {
        return Verdict::Same;
    }
    if (ci_low > 1.0 && speedup >= band) {
        return Verdict::Faster;
    }
    if (ci_high < 1.0 && speedup <= 1.0 / band) {
        return Verdict::Slower;
    }
    return Verdict::Ambiguous;
}

double student_t975(int degrees) {
    // Two-sided 95% critical values of Student's t (df 1..30), then the normal's.
    static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                   2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                   2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (degrees < 1) {
        return table[0];
    }
    return degrees <= 30 ? table[degrees - 1] : 1.96;
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
                                 std::uint64_t seed, const VerdictRule& rule) {
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
    estimate.verdict = classify_speedup(estimate.speedup, estimate.ci_low, estimate.ci_high, rule);
    return estimate;
}

ReplicatedEstimate estimate_replicated(const std::vector<std::vector<TimedBlock>>& launches,
                                       const VerdictRule& rule, int bootstrap_rounds, std::uint64_t seed,
                                       double unseen_run_sd) {
    ReplicatedEstimate r;
    std::vector<TimedBlock> all;
    std::vector<double> logs, within;
    for (std::size_t i = 0; i < launches.size(); ++i) {
        SpeedupEstimate e = estimate_speedup(launches[i], bootstrap_rounds, seed + i, rule);
        if (e.speedup > 0 && e.ci_low > 0 && e.ci_high > 0) {
            logs.push_back(std::log(e.speedup));
            // The launch's own interval as a normal one: its half-width over 1.96 is the sd of its log.
            within.push_back((std::log(e.ci_high) - std::log(e.ci_low)) / (2 * 1.96));
        }
        all.insert(all.end(), launches[i].begin(), launches[i].end());
        r.launches.push_back(std::move(e));
    }
    // Samples pooled over every launch, for the sides' summaries.
    const SpeedupEstimate pooled_samples = estimate_speedup(all, 0, seed, rule);
    r.pooled.reference = pooled_samples.reference;
    r.pooled.candidate = pooled_samples.candidate;
    if (logs.empty()) {
        return r;
    }
    if (logs.size() == 1) {
        const SpeedupEstimate& only = r.launches.front().speedup > 0 ? r.launches.front() : r.launches.back();
        r.pooled.speedup = std::exp(logs.front());
        r.pooled.ci_low = only.ci_low;
        r.pooled.ci_high = only.ci_high;
        r.pooled.verdict = only.verdict;
        r.within_sd = within.front();
        return r;
    }
    const double n = static_cast<double>(logs.size());
    const double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / n;
    double squares = 0;
    for (double d : logs) {
        squares += (d - mean) * (d - mean);
    }
    r.between_sd = std::sqrt(squares / (n - 1));
    double within_var = 0;
    for (double w : within) {
        within_var += w * w;
    }
    within_var /= n;
    r.within_sd = std::sqrt(within_var);
    r.between_dominates = r.between_sd * r.between_sd > 2 * within_var;
    // The launches' spread is the replicate variance, known from n launches only: Student's t with n-1
    // degrees of freedom widens it. The launches' own intervals set a floor under it (a few launches
    // that happen to agree must not claim more than each of them measured); that floor's variance comes
    // from each launch's blocks, not from the n launches, so it takes the normal quantile. With t on
    // both, one launch holding a slow block made an A/A run of three launches "ambiguous" ([0.94, 1.05]
    // around launches of 0.997-0.999; H200, docs/perf.md "Replication, measured").
    const double between_half =
        student_t975(static_cast<int>(logs.size()) - 1) * std::sqrt(r.between_sd * r.between_sd / n);
    const double within_half = 1.96 * std::sqrt(within_var / n);
    // What one run's launches cannot see (kUnseenRunSd): a state of the device that lasts across them
    // moved problem 12's H200 runs by more than their intervals (two of nine missed the median of the
    // nine by 0.2%, all three of their launches in one of the device's modes). Independent of the
    // launches' spread, so in quadrature.
    r.unseen_run_sd = std::max(0.0, unseen_run_sd);
    const double seen_half = std::max(between_half, within_half);
    const double half =
        std::sqrt(seen_half * seen_half + (1.96 * r.unseen_run_sd) * (1.96 * r.unseen_run_sd));
    r.replicated = true;
    r.pooled.speedup = std::exp(mean);
    r.pooled.ci_low = std::exp(mean - half);
    r.pooled.ci_high = std::exp(mean + half);
    r.pooled.verdict = classify_speedup(r.pooled.speedup, r.pooled.ci_low, r.pooled.ci_high, rule);
    return r;
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
