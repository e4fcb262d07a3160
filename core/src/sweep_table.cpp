#include "pkbw/core/sweep_table.h"

#include "pkbw/core/error.h"

#include <cmath>

namespace pkbw {

double SweepGenerationRow::fast_p(double p) const {
    if (attempted == 0)
        return 0;
    if (p <= 0)
        return static_cast<double>(correct) / attempted;
    int count = 0;
    for (double s : speedups)
        count += s > p ? 1 : 0;
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
                for (const auto& s : store.perf_summaries(run->id)) {
                    if (s.side != Side::Candidate || s.rank != -1)
                        continue;
                    if (s.statistic == "speedup" && std::isfinite(s.value) && s.value > 0)
                        view.speedup = s.value;
                    if (s.statistic == "verdict")
                        view.faster = s.value > 0.5;
                }
                if (view.speedup) {
                    ++row.timed;
                    row.speedups.push_back(*view.speedup);
                    row.faster += view.faster ? 1 : 0;
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
