// The generation matrix without widgets: each (generation, problem) pair's run as the Generations tab
// shows it (latest or best, infrastructure errors never a result), the per-generation figures over the
// fixed denominator, and the labels; read from the store by load_generation_matrix.
#include "generationsview.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

namespace pkbw::app {

std::string short_generation_label(const GenerationLabel& label) {
    if (label.parsed && !label.model.empty()) {
        return label.provider.empty() ? label.model : label.provider + "/" + label.model;
    }
    return label.label;
}

bool is_infrastructure_error(RunStatus status) {
    return status == RunStatus::Error || status == RunStatus::Interrupted || status == RunStatus::Aborted ||
           status == RunStatus::Running;
}

PairOutcome MatrixCell::outcome() const {
    PairOutcome o;
    o.correct = result && correct;
    o.speedup = speedup;
    o.ci_low = ci_low;
    o.ci_high = ci_high;
    o.verdict = verdict;
    o.pkb_speedup = pkb_speedup;
    return o;
}

std::vector<ScoredResult> GenerationMatrix::results_of(int generation) const {
    std::vector<ScoredResult> out;
    for (int p = 0; p < static_cast<int>(problems.size()); ++p) {
        auto it = cells.find({generation, p});
        out.push_back(it == cells.end() || !it->second.result ? PairOutcome{} : it->second.outcome());
    }
    return out;
}

GenerationStats GenerationMatrix::stats_of(int generation) const {
    GenerationStats st;
    for (int p = 0; p < static_cast<int>(problems.size()); ++p) {
        auto it = cells.find({generation, p});
        if (it == cells.end()) {
            continue;
        }
        const MatrixCell& c = it->second;
        if (!c.result) {
            ++st.infra_only;
            continue;
        }
        ++st.attempted;
    }
    st.figures = paper_figures(results_of(generation));
    st.correct = st.figures.correct;
    st.fast_1 = static_cast<int>(std::lround(st.figures.fast_p(1.0) * st.figures.attempted));
    st.geomean = st.figures.geomean();
    st.geomean_n = st.figures.geomean_n();
    return st;
}

namespace {

// A generation: a folder PKB's layout names (solutions_<backend>_<precision>_<hardware>_<provider>_<model>),
// parsed, or at least named solutions_*. A candidate given by its own path ("cuda", "sol") is ad hoc.
bool is_generation(const GenerationLabel& g) {
    return g.parsed || g.label.rfind("solutions_", 0) == 0;
}

// Problem order: the number PKB gives each problem ("12_allgather_gemm" is 12), then the name.
std::pair<long, std::string> problem_key(const std::string& stem, std::optional<int> id) {
    long n = id ? *id : -1;
    if (!id) {
        std::size_t i = 0;
        while (i < stem.size() && std::isdigit(static_cast<unsigned char>(stem[i]))) {
            ++i;
        }
        n = i > 0 ? std::stol(stem.substr(0, i)) : std::numeric_limits<long>::max();
    }
    return {n, stem};
}

struct RunResult {
    const RunRecord* run;
    std::optional<double> speedup;
    std::string source;
    bool measured = false;                 // a perf run or an imported PKB run with PKB's speedup
    std::optional<double> ci_low, ci_high; // pkbw's stored interval and verdict (perf runs)
    std::optional<Verdict> verdict;
    std::optional<double> pkb_speedup; // PKB's figure beside pkbw's
};

// Every run of the store, newest first, read a page at a time.
std::vector<RunRecord> all_runs_newest_first(const Store& store) {
    RunSort sort;
    sort.column = RunSortColumn::StartedAt;
    sort.descending = true;
    std::vector<RunRecord> runs;
    for (int offset = 0;; offset += 5000) {
        auto page = store.list_runs({}, sort, 5000, offset);
        const bool last = page.size() < 5000;
        for (auto& r : page) {
            runs.push_back(std::move(r));
        }
        if (last) {
            return runs;
        }
    }
}

// Two generations with one short label (same model, other precision): the full label for both.
void disambiguate_short_labels(GenerationMatrix& m) {
    for (std::size_t i = 0; i < m.short_labels.size(); ++i) {
        if (std::count(m.short_labels.begin(), m.short_labels.end(), m.short_labels[i]) > 1) {
            for (std::size_t j = 0; j < m.short_labels.size(); ++j) {
                if (j != i && m.short_labels[j] == m.short_labels[i]) {
                    m.short_labels[j] = m.generations[j];
                }
            }
            m.short_labels[i] = m.generations[i];
        }
    }
}

// A run's result with its speedup: a perf run's as pkbw stored it, an imported PKB run's PKB's (the
// figures read by core, as the Sweeps tab reads them).
RunResult run_result(const Store& store, const RunRecord* r) {
    RunResult res{r, std::nullopt, "", false, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
    const bool imported =
        r->backend.rfind("pkb-", 0) == 0 && r->command_line.size() > 1 && r->command_line[1] == "import-pkb";
    if (r->mode == RunMode::Perf || imported) {
        const StoredSpeedup stored = stored_speedup(store.perf_summaries(r->id));
        if (r->mode == RunMode::Perf && stored.speedup) {
            res.speedup = stored.speedup;
            res.source = "pkbw";
            res.ci_low = stored.ci_low;
            res.ci_high = stored.ci_high;
            res.verdict = stored.verdict;
            res.pkb_speedup = stored.pkb_speedup;
        } else if (imported && stored.pkb_speedup) {
            res.speedup = stored.pkb_speedup;
            res.source = "PKB";
        }
        res.measured = res.speedup.has_value() || r->mode == RunMode::Perf;
    }
    return res;
}

// A cell from its pair's results (newest first): the latest measured result, else the latest; with
// CellPick::Best the passing result with the largest speedup where one has a speedup.
void fill_cell(MatrixCell& c, const std::vector<RunResult>& results, CellPick pick) {
    c.results = static_cast<int>(results.size());
    const RunResult* chosen = nullptr;
    for (const RunResult& r : results) {
        if (r.measured) {
            chosen = &r;
            break;
        }
    }
    if (!chosen) {
        chosen = &results.front();
    }
    if (pick == CellPick::Best) {
        for (const RunResult& r : results) {
            if (r.run->status == RunStatus::Pass && r.speedup &&
                (!chosen->speedup || chosen->run->status != RunStatus::Pass ||
                 *r.speedup > *chosen->speedup)) {
                chosen = &r;
            }
        }
    }
    c.run_id = chosen->run->id;
    c.status = chosen->run->status;
    c.correct = chosen->run->status == RunStatus::Pass;
    c.speedup = chosen->run->status == RunStatus::Pass ? chosen->speedup : std::nullopt;
    c.speedup_source = c.speedup ? chosen->source : "";
    if (c.speedup) {
        c.ci_low = chosen->ci_low;
        c.ci_high = chosen->ci_high;
        c.verdict = chosen->verdict;
        c.pkb_speedup = chosen->pkb_speedup;
    }
    c.result = true;
}

} // namespace

std::vector<std::string> store_generation_labels(const Store& store) {
    std::vector<std::string> labels;
    for (auto& label : store.distinct_values(RunField::Generation))
        if (is_generation(parse_generation_label(label)))
            labels.push_back(std::move(label));
    return labels; // distinct_values orders them
}

GenerationMatrix load_generation_matrix(const Store& store, CellPick pick) {
    GenerationMatrix m;
    m.pick = pick;
    m.store_generations = store_generation_labels(store);
    const std::vector<RunRecord> runs = all_runs_newest_first(store);
    std::map<std::string, std::string> short_of;
    std::map<std::pair<long, std::string>, int> problem_keys;
    std::vector<const RunRecord*> kept;
    for (const auto& r : runs) {
        if (r.problem_stem == "calibrate") {
            ++m.left_out_calibration;
        } else if (r.solution_kind == SolutionKind::Reference) {
            ++m.left_out_reference;
        } else if (!is_generation(r.generation)) {
            ++m.left_out_adhoc;
        } else {
            kept.push_back(&r);
            short_of.emplace(r.generation.label, short_generation_label(r.generation));
            problem_keys.emplace(problem_key(r.problem_stem, r.problem_id), 0);
        }
    }
    std::map<std::string, int> gen_index, problem_index;
    for (const auto& [label, short_label] : short_of) {
        gen_index[label] = static_cast<int>(m.generations.size());
        m.generations.push_back(label);
        m.short_labels.push_back(short_label);
    }
    disambiguate_short_labels(m);
    for (const auto& [key, unused] : problem_keys) {
        if (!problem_index.count(key.second)) {
            problem_index[key.second] = static_cast<int>(m.problems.size());
            m.problems.push_back(key.second);
        }
    }
    std::map<std::pair<int, int>, std::vector<RunResult>> by_cell; // newest first
    for (const RunRecord* r : kept) {
        const std::pair<int, int> key{gen_index[r->generation.label], problem_index[r->problem_stem]};
        MatrixCell& c = m.cells[key];
        if (is_infrastructure_error(r->status)) {
            ++c.infra_errors;
            if (c.run_id == 0) { // shown only while the pair has no result at all
                c.run_id = r->id;
                c.status = r->status;
            }
            continue;
        }
        by_cell[key].push_back(run_result(store, r));
    }
    for (const auto& [key, results] : by_cell) {
        fill_cell(m.cells[key], results, pick);
    }
    return m;
}

GenerationMatrixModel::GenerationMatrixModel(QObject* parent)
    : QAbstractTableModel(parent) {}

} // namespace pkbw::app
