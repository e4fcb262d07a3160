#include "perfstatistics.h"

#include "pkbw/core/perf_stats.h"
#include "qtconvert.h"

#include <QObject>
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>

namespace pkbw::app {
namespace {

enum class Unit { Time, Speedup, Bandwidth, Clock, Count, Verdict, Band, Figure, None };

struct Known {
    std::string_view key;
    const char* label;
    Unit unit;
};

// Every key pkbw perf and pkbw import-pkb store (engine/cli), in the order a reader looks for them.
constexpr Known kKnown[] = {
    {"median_ms", "median per iteration", Unit::Time},
    {"mean_ms", "mean per iteration", Unit::Time},
    {"p5_ms", "5th percentile per iteration", Unit::Time},
    {"p95_ms", "95th percentile per iteration", Unit::Time},
    {"plausibility_floor_ms", "plausibility floor (fastest credible iteration)", Unit::Time},
    {"algbw_gbps", "algorithm bandwidth", Unit::Bandwidth},
    {"busbw_gbps", "bus bandwidth", Unit::Bandwidth},
    {"peak_busbw_gbps", "peak bus bandwidth", Unit::Bandwidth},
    {"speedup", "speedup (pooled over launches)", Unit::Speedup},
    {"speedup_ci_low", "speedup, 95% interval from", Unit::Speedup},
    {"speedup_ci_high", "speedup, 95% interval to", Unit::Speedup},
    {"verdict", "verdict", Unit::Verdict},
    {"verdict_band", "verdict band (a difference beyond ±)", Unit::Band},
    {"launches", "launches", Unit::Count},
    {"extended_from", "launches planned before an ambiguous verdict extended the run", Unit::Count},
    {"pkb_mean_ms", "PKB protocol: mean per iteration", Unit::Time},
    {"pkb_speedup", "PKB's speedup", Unit::Speedup},
    {"pkb_speedup_min", "PKB's speedup, lowest trial", Unit::Speedup},
    {"pkb_speedup_max", "PKB's speedup, highest trial", Unit::Speedup},
    {"pkb_wall_time_ms", "PKB: mean wall time per iteration", Unit::Time},
    {"pkb_wall_time_ms_max", "PKB: wall time per iteration, slowest rank", Unit::Time},
    {"pkb_wall_time_std_ms", "PKB: standard deviation per iteration", Unit::Time},
    {"pkb_min_time_ms", "PKB: fastest iteration", Unit::Time},
    {"pkb_max_time_ms", "PKB: slowest iteration", Unit::Time},
    {"pkb_iterations", "PKB: timed iterations", Unit::Count},
    {"pkb_warmup_iterations", "PKB: warm-up iterations", Unit::Count},
    {"pkb_num_input_groups", "PKB: input groups", Unit::Count},
    {"headline_graph", "headline figure (docs/perf.md \"A method per kernel size\")", Unit::Figure},
    {"launched_speedup", "launched figure: speedup", Unit::Speedup},
    {"launched_ci_low", "launched figure: 95% interval from", Unit::Speedup},
    {"launched_ci_high", "launched figure: 95% interval to", Unit::Speedup},
    {"launched_verdict", "launched figure: verdict", Unit::Verdict},
    {"graph_speedup", "graph figure: speedup", Unit::Speedup},
    {"graph_ci_low", "graph figure: 95% interval from", Unit::Speedup},
    {"graph_ci_high", "graph figure: 95% interval to", Unit::Speedup},
    {"graph_verdict", "graph figure: verdict", Unit::Verdict},
    {"graph_median_ms", "graph figure: median per call", Unit::Time},
    {"graph_passes", "graph figure: passes over the input sets a block", Unit::Count},
    {"sm_clock_start_mhz", "SM clock at the start", Unit::Clock},
    {"sm_clock_end_mhz", "SM clock at the end", Unit::Clock},
};

// Keys numbered per launch: "launch_speedup_2" is launch 2's speedup.
constexpr Known kPerLaunch[] = {
    {"launch_speedup_", "launch %1: speedup", Unit::Speedup},
    {"launch_ci_low_", "launch %1: 95% interval from", Unit::Speedup},
    {"launch_ci_high_", "launch %1: 95% interval to", Unit::Speedup},
};

QString value_text(Unit unit, double value, bool microseconds) {
    switch (unit) {
    case Unit::Time:
        return microseconds ? QObject::tr("%1 µs").arg(QString::number(value * 1e3, 'f', 3))
                            : QObject::tr("%1 ms").arg(QString::number(value, 'f', 4));
    case Unit::Speedup:
        return QObject::tr("%1×").arg(QString::number(value, 'f', 3));
    case Unit::Bandwidth:
        return QObject::tr("%1 GB/s").arg(QString::number(value, 'f', 1));
    case Unit::Clock:
        return QObject::tr("%1 MHz").arg(QString::number(value, 'f', 0));
    case Unit::Count:
        return QString::number(std::llround(value));
    case Unit::Verdict:
        return verdict_text(verdict_from_code(value));
    case Unit::Band:
        return QObject::tr("%1%").arg(QString::number(100 * value, 'g', 3));
    case Unit::Figure:
        return value == 1.0 ? QObject::tr("graph figure (calls replayed from a CUDA graph)")
                            : QObject::tr("launched figure (each call launched by its process)");
    case Unit::None:
        break;
    }
    return QString::number(value, 'g', 6);
}

} // namespace

StatisticText describe_statistic(const PerfSummaryRow& row, bool microseconds) {
    std::string_view key = row.statistic;
    QString trial; // PKB's per-trial rows end in ".trial_<k>"
    if (const auto dot = key.rfind(".trial_"); dot != std::string_view::npos) {
        trial = QObject::tr(", trial %1").arg(to_qstring(key.substr(dot + 7)));
        key = key.substr(0, dot);
    }
    StatisticText text{to_qstring(row.statistic), QString::number(row.value, 'g', 6),
                       to_qstring(row.statistic)};
    for (const Known& k : kKnown) {
        if (k.key == key) {
            text.label = QObject::tr(k.label) + trial;
            text.value = value_text(k.unit, row.value, microseconds);
            return text;
        }
    }
    for (const Known& k : kPerLaunch) {
        if (key.substr(0, k.key.size()) == k.key) {
            text.label = QObject::tr(k.label).arg(to_qstring(key.substr(k.key.size())));
            text.value = value_text(k.unit, row.value, microseconds);
            return text;
        }
    }
    return text;
}

bool statistics_in_microseconds(const std::vector<PerfSummaryRow>& rows) {
    double largest = 0;
    for (const PerfSummaryRow& row : rows) {
        const std::string_view key = row.statistic;
        const bool time =
            key.find("_ms") != std::string_view::npos && key.find("std") == std::string_view::npos;
        if (time && std::isfinite(row.value)) {
            largest = std::max(largest, row.value);
        }
    }
    return largest > 0 && largest < 1.0;
}

// pkbw's own ABBA blocks (block >= 0) of reference and candidate; PKB's protocol series (block
// kPkbProtocolBlock) and the bare NCCL loop are other measurements and stay out of the speedup.
GroupedSamples group_samples(const RunData& d) {
    GroupedSamples g;
    for (const PerfSample& s : d.samples) {
        if (s.block < 0 || (s.side != Side::Reference && s.side != Side::Candidate)) {
            continue;
        }
        const int side = s.side == Side::Reference ? 0 : 1;
        g.per_rank[side][s.rank].push_back(s.ms);
        g.per_block[side][s.block][s.rank].push_back(s.ms);
    }
    return g;
}

namespace {

// Stored block indices are launch * 1000 + block for runs of several launches (a single launch: the
// block alone).
constexpr int kBlocksPerLaunch = 1000;

} // namespace

PerfFigures compute_perf(const RunData& data) {
    PerfFigures f;
    // The run's own pooled figures first: what the CLI printed, the sweep table and fast_p read.
    const StoredSpeedup stored = stored_speedup(data.summaries);
    if (stored.speedup && stored.ci_low && stored.ci_high) {
        f.has_figures = true;
        f.stored = true;
        f.speedup = *stored.speedup;
        f.ci_low = *stored.ci_low;
        f.ci_high = *stored.ci_high;
        const Verdict verdict = stored.verdict
                                    ? *stored.verdict
                                    : classify_speedup(f.speedup, f.ci_low, f.ci_high, VerdictRule{});
        f.verdict = verdict_text(verdict);
        f.launches = stored.launches ? *stored.launches : std::max<int>(1, stored.per_launch.size());
        f.extended_from = stored.extended_from.value_or(0);
        f.per_launch = stored.per_launch;
    }
    const GroupedSamples g = group_samples(data);
    if (g.per_rank[0].empty() || g.per_rank[1].empty()) {
        return f;
    }
    f.has_samples = true;
    if (!f.stored) {
        // An older run without stored figures: recompute from its blocks, each launch apart.
        std::map<int, std::vector<TimedBlock>> launches;
        for (int side = 0; side < 2; ++side) {
            for (const auto& [block, ranks] : g.per_block[side]) {
                std::vector<std::vector<double>> per_rank;
                for (const auto& [rank, ms] : ranks) {
                    per_rank.push_back(ms);
                }
                TimedBlock b;
                b.side = side == 0 ? BlockSide::Reference : BlockSide::Candidate;
                b.index = block % kBlocksPerLaunch;
                b.samples = slowest_rank_per_iteration(per_rank);
                launches[block / kBlocksPerLaunch].push_back(std::move(b));
            }
        }
        std::vector<std::vector<TimedBlock>> by_launch;
        for (auto& [launch, blocks] : launches) {
            by_launch.push_back(std::move(blocks));
        }
        const ReplicatedEstimate r = estimate_replicated(by_launch);
        f.has_figures = true;
        f.speedup = r.pooled.speedup;
        f.ci_low = r.pooled.ci_low;
        f.ci_high = r.pooled.ci_high;
        f.verdict = verdict_text(r.pooled.verdict);
        f.launches = static_cast<int>(by_launch.size());
        if (r.launches.size() > 1) {
            for (std::size_t i = 0; i < r.launches.size(); ++i) {
                f.per_launch.push_back({static_cast<int>(i), r.launches[i].speedup, r.launches[i].ci_low,
                                        r.launches[i].ci_high});
            }
        }
    }
    for (int side = 0; side < 2; ++side) {
        double worst = -1;
        for (const auto& [rank, ms] : g.per_rank[side]) {
            const double median = percentile(ms, 50);
            if (median > worst) {
                worst = median;
                (side == 0 ? f.slowest_reference_rank : f.slowest_candidate_rank) = rank;
            }
        }
    }
    return f;
}

} // namespace pkbw::app
