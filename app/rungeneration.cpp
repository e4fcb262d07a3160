#include "rungeneration.h"

#include "pkbw/core/sweep_table.h"

namespace pkbw::app {

RunGeneration load_run_generation(const Store& store, const RunRecord& run) {
    RunGeneration out;
    if (store.schema_version() < 4) {
        return out;
    }
    if (auto attempt = agent_attempt_for_run(store, run.id)) {
        out.generation = get_generation(store, attempt->generation_id);
        out.attempt = attempt->attempt;
        for (auto& a : agent_attempts(store, attempt->generation_id)) {
            if (a.problem_stem == attempt->problem_stem) {
                std::optional<PairOutcome> speedup;
                if (a.run_id && a.speedup) {
                    const StoredSpeedup stored = stored_speedup(store.perf_summaries(*a.run_id));
                    speedup = PairOutcome{true,           a.speedup,      stored.ci_low,
                                          stored.ci_high, stored.verdict, stored.pkb_speedup};
                }
                out.trajectory_speedups.push_back(speedup);
                out.trajectory.push_back(std::move(a));
            }
        }
        for (auto& e : generation_exchanges(store, attempt->generation_id)) {
            if (e.problem_stem == attempt->problem_stem) {
                out.exchanges.push_back(std::move(e));
            }
        }
        return out;
    }
    if (run.solution_sha256.empty() && run.solution_path.empty()) {
        return out;
    }
    // A `pkbw generate` candidate: the exchange that saved the file this run judged. The newest
    // generation first, so that a file written twice is credited to its latest writer.
    for (const auto& g : list_generations(store, 1000)) {
        for (auto& e : generation_exchanges(store, g.id)) {
            const bool same_file = !run.solution_sha256.empty() && e.solution_sha256 == run.solution_sha256;
            const bool same_path = run.solution_sha256.empty() && !e.solution_path.empty() &&
                                   e.solution_path == run.solution_path;
            if (same_file || same_path) {
                out.exchanges.push_back(std::move(e));
            }
        }
        if (!out.exchanges.empty()) {
            out.generation = g;
            // Every try of the sample that produced the file (retries, truncated replies before it).
            const ExchangeRow saved = out.exchanges.back();
            out.exchanges.clear();
            for (auto& e : generation_exchanges(store, g.id)) {
                if (e.problem_stem == saved.problem_stem && e.sample == saved.sample) {
                    out.exchanges.push_back(std::move(e));
                }
            }
            return out;
        }
    }
    return out;
}

} // namespace pkbw::app
