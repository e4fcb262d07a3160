#include "pkbw/core/sweep_table.h"

#include "pkbw/core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace pkbw {

namespace {

// "launch_speedup_3" -> 3 when `name` is `prefix` followed by digits only.
std::optional<int> launch_index(const std::string& name, const std::string& prefix) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
        return std::nullopt;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return std::atoi(digits.c_str());
}

} // namespace

StoredSpeedup stored_speedup(const std::vector<PerfSummaryRow>& summaries) {
    StoredSpeedup out;
    std::map<int, StoredLaunch> launches;
    for (const auto& s : summaries) {
        if (s.side != Side::Candidate || s.rank != -1)
            continue;
        const std::string& name = s.statistic;
        if (name == "speedup") {
            if (std::isfinite(s.value) && s.value > 0)
                out.speedup = s.value;
        } else if (name == "speedup_ci_low") {
            out.ci_low = s.value; // a non-finite bound stays: such a pair clears no p
        } else if (name == "speedup_ci_high") {
            out.ci_high = s.value;
        } else if (name == "verdict") {
            out.verdict = verdict_from_code(s.value);
        } else if (name == "verdict_band") {
            out.band = s.value;
        } else if (name == "launches") {
            if (std::isfinite(s.value) && s.value >= 0)
                out.launches = static_cast<int>(s.value);
        } else if (name == "pkb_speedup") {
            out.pkb_speedup = s.value;
        } else if (auto i = launch_index(name, "launch_speedup_")) {
            launches[*i].index = *i;
            launches[*i].speedup = s.value;
        } else if (auto i = launch_index(name, "launch_ci_low_")) {
            launches[*i].index = *i;
            launches[*i].ci_low = s.value;
        } else if (auto i = launch_index(name, "launch_ci_high_")) {
            launches[*i].index = *i;
            launches[*i].ci_high = s.value;
        }
    }
    for (auto& [index, launch] : launches)
        out.per_launch.push_back(launch);
    return out;
}

double fast_bound(double speedup, std::optional<double> ci_low) {
    // Legacy (no interval stored): the point estimate, the only figure there is (see the header).
    return ci_low ? *ci_low : speedup;
}

bool counts_toward_fast_p(bool correct, std::optional<double> speedup, std::optional<double> ci_low,
                          double p) {
    if (!correct)
        return false;
    if (p <= 0)
        return true;
    if (!speedup)
        return false;
    if (ci_low)
        return clears(*ci_low, p);
    return *speedup > p; // legacy: no interval stored (see the header)
}

double SweepGenerationRow::fast_p(double p) const {
    if (attempted == 0)
        return 0;
    if (p <= 0)
        return static_cast<double>(correct) / attempted;
    int count = 0;
    for (double bound : fast_bounds)
        count += bound > p ? 1 : 0; // counts_toward_fast_p: clears(ci_low, p), or legacy speedup > p
    return static_cast<double>(count) / attempted;
}

std::optional<double> SweepGenerationRow::geomean() const {
    if (speedups.empty())
        return std::nullopt;
    double log_sum = 0;
    for (double s : speedups)
        log_sum += std::log(s);
    return std::exp(log_sum / static_cast<double>(speedups.size()));
}

std::vector<double> default_fast_p() {
    return {0, 1, 1.5, 2};
}

SweepTable sweep_table(const Store& store, std::int64_t sweep_id) {
    SweepTable table;
    auto sweep = find_sweep(store, sweep_id);
    if (!sweep)
        throw StoreError("store " + store.path().string() + ": no sweep " + std::to_string(sweep_id));
    table.sweep = *sweep;
    std::map<std::string, std::size_t> index;
    for (auto& pair : sweep_pairs(store, sweep_id)) {
        SweepPairView view;
        view.pair = pair;
        if (!index.count(pair.generation_label)) {
            index[pair.generation_label] = table.generations.size();
            table.generations.push_back({});
            table.generations.back().label = pair.generation_label;
        }
        SweepGenerationRow& row = table.generations[index[pair.generation_label]];
        ++row.attempted;
        ++table.total;
        std::optional<RunRecord> run;
        if (pair.run_id)
            run = store.get_run(*pair.run_id);
        if (pair.state == "failed" && !run) {
            view.status = "no run";
        } else if (!run || !sweep_run_status_is_final(run->status) || pair.state != "done") {
            view.status = "not run";
        } else {
            view.status = std::string(to_string(run->status));
            ++row.judged;
            ++table.done;
            if (run->status == RunStatus::Pass || run->status == RunStatus::InvalidTiming)
                ++row.correct;
            if (run->status == RunStatus::Pass) {
                const StoredSpeedup stored = stored_speedup(store.perf_summaries(run->id));
                view.speedup = stored.speedup;
                if (view.speedup) {
                    view.ci_low = stored.ci_low;
                    view.ci_high = stored.ci_high;
                    view.verdict = stored.verdict;
                    view.faster = stored.verdict == Verdict::Faster;
                    ++row.timed;
                    row.speedups.push_back(*view.speedup);
                    const double bound = fast_bound(*view.speedup, view.ci_low);
                    if (std::isfinite(bound))
                        row.fast_bounds.push_back(bound);
                    row.faster += view.faster ? 1 : 0;
                    if (view.verdict)
                        ++row.verdicts[verdict_name(*view.verdict)];
                }
            }
        }
        if (view.status != "pass" && view.status != "invalid_timing")
            ++row.failures[view.status];
        if (view.status == "invalid_timing")
            ++row.failures[view.status]; // correct, but counted among the failures of timing
        table.pairs.push_back(std::move(view));
    }
    return table;
}

} // namespace pkbw
