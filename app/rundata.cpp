#include "rundata.h"

#include "pkbw/core/error.h"
#include "pkbw/core/rank_config.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/run_layout.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

namespace pkbw::app {
namespace fs = std::filesystem;

int RunData::world_size() const {
    int w = std::max(1, run.world_size);
    for (const auto& r : ranks) {
        w = std::max(w, r.rank + 1);
    }
    for (const auto& t : tensors) {
        w = std::max(w, t.rank + 1);
    }
    return w;
}

int RunData::trial_count() const {
    int n = std::max(1, run.mode == RunMode::Eval ? run.trials : 1);
    for (const auto& r : ranks) {
        n = std::max(n, r.trial + 1);
    }
    for (const auto& t : tensors) {
        n = std::max(n, t.trial + 1);
    }
    return n;
}

std::vector<const TensorResultRow*> RunData::tensors_of(int trial, int rank) const {
    std::vector<const TensorResultRow*> out;
    for (const auto& t : tensors) {
        if (t.trial == trial && t.rank == rank) {
            out.push_back(&t);
        }
    }
    return out;
}

const RankResultRow* RunData::rank_result(int trial, int rank, Side side) const {
    for (const auto& r : ranks) {
        if (r.trial == trial && r.rank == rank && r.side == side) {
            return &r;
        }
    }
    return nullptr;
}

std::optional<double> RunData::summary(std::string_view statistic, Side side, int rank) const {
    for (const auto& s : summaries) {
        if (s.statistic == statistic && s.side == side && s.rank == rank) {
            return s.value;
        }
    }
    return std::nullopt;
}

fs::path output_path(const RunData& data, int trial, int rank, Side side) {
    const std::string side_name(to_string(side));
    for (const auto& a : data.artifacts) {
        // outputs_<side>: a recorded artifact per side (a PKB run's .pt files, imported with import-pkb).
        if (a.trial == trial && a.rank == rank &&
            (a.kind == "outputs_" + side_name ||
             (a.kind == "outputs" && a.path.find("_" + side_name + ".safetensors") != std::string::npos))) {
            return a.path;
        }
    }
    return run_layout::trial_outputs(data.run.run_dir, trial, rank, side_name);
}

RunData load_run(const fs::path& store_path, std::int64_t run_id) {
    const Store store = Store::open_read_only(store_path);
    RunData d;
    auto run = store.get_run(run_id);
    if (!run) {
        throw StoreError(store_path.string() + ": no run " + std::to_string(run_id));
    }
    d.run = std::move(*run);
    d.from_store = true;
    // One damaged table must not hide the rest of the run: each part is read on its own.
    auto part = [&d](const char* what, auto read) {
        try {
            read();
        } catch (const StoreError& error) {
            d.unreadable.push_back(std::string(what) + ": " + error.what());
        }
    };
    part("rank results", [&] { d.ranks = store.rank_results(run_id); });
    part("tensor results", [&] { d.tensors = store.tensor_results(run_id, true); });
    part("perf samples", [&] { d.samples = store.perf_samples(run_id); });
    part("perf summaries", [&] { d.summaries = store.perf_summaries(run_id); });
    part("flags", [&] { d.flags = store.run_flags(run_id); });
    part("artifacts", [&] { d.artifacts = store.artifacts(run_id); });
    return d;
}

RunData load_run_folder(const fs::path& folder) {
    RunData d;
    d.run.run_dir = folder.string();
    d.run.problem_stem = folder.filename().string();
    d.run.status = RunStatus::Pass;
    const fs::path config_path = run_layout::config(folder);
    if (fs::exists(config_path)) {
        std::ifstream in(config_path);
        const auto config = nlohmann::json::parse(in, nullptr, false);
        if (config.is_discarded() || !config.is_object()) {
            throw FormatError(config_path.string() + ": not a JSON object");
        }
        // core's reader of the rank configuration, as a reader that only shows the run (no libraries,
        // no output folder required: a PKB run's config has neither library).
        const RankConfig ranks = parse_rank_config(config, config_path.string(), false);
        // The run's number in the store that recorded it (config.json's run_id), shown as "Run 7";
        // from_store stays false, so nothing asks the open store for that number.
        d.run.id = ranks.run_id;
        if (!ranks.problem.empty())
            d.run.problem_stem = ranks.problem;
        d.run.backend = ranks.backend;
        d.run.world_size = ranks.world_size;
        d.run.dtype = dtype_name(ranks.dtype);
        d.run.trials = ranks.trials;
        d.run.atol = ranks.atol;
        d.run.rtol = ranks.rtol;
        d.run.mode = parse_run_mode(ranks.mode).value_or(RunMode::Eval);
    }
    const fs::path outputs = folder / "outputs";
    if (!fs::is_directory(outputs)) {
        throw Error(folder.string() + ": no outputs/ folder (is this a pkbw run folder?)");
    }
    const std::regex trial_re("trial_(\\d+)"), rank_re("rank_(\\d+)_reference\\.safetensors");
    CompareOptions options;
    options.atol = d.run.atol;
    options.rtol = d.run.rtol;
    int max_rank = -1;
    std::vector<std::pair<int, int>> pairs;
    for (const auto& trial_dir : fs::directory_iterator(outputs)) {
        std::smatch tm;
        const std::string tname = trial_dir.path().filename().string();
        if (!trial_dir.is_directory() || !std::regex_match(tname, tm, trial_re)) {
            continue;
        }
        for (const auto& file : fs::directory_iterator(trial_dir.path())) {
            std::smatch rm;
            const std::string fname = file.path().filename().string();
            if (std::regex_match(fname, rm, rank_re)) {
                pairs.emplace_back(std::stoi(tm[1]), std::stoi(rm[1]));
            }
        }
    }
    std::sort(pairs.begin(), pairs.end());
    for (auto [trial, rank] : pairs) {
        max_rank = std::max(max_rank, rank);
        RankResultRow rr;
        rr.trial = trial;
        rr.rank = rank;
        rr.side = Side::Candidate;
        const fs::path cand_path = output_path(d, trial, rank, Side::Candidate);
        if (!fs::exists(cand_path)) {
            rr.outcome = RankOutcome::Skipped;
            rr.message = "no candidate outputs";
            d.ranks.push_back(rr);
            continue;
        }
        const OutputSet ref = read_output_file(output_path(d, trial, rank, Side::Reference));
        const OutputSet cand = read_output_file(cand_path);
        const OutputComparison cmp = compare_outputs(ref, cand, options);
        rr.outcome = cmp.pass ? RankOutcome::Ok : RankOutcome::Mismatch;
        rr.message = cmp.first_error;
        d.ranks.push_back(rr);
        for (const auto& t : cmp.tensors) {
            TensorResultRow row = from_comparison(t);
            row.trial = trial;
            row.rank = rank;
            d.tensors.push_back(std::move(row));
        }
        if (!cmp.pass) {
            d.run.status = RunStatus::Mismatch;
        }
    }
    d.run.world_size = std::max(d.run.world_size, max_rank + 1);
    return d;
}

TieRowsByOutput stored_tie_rows(const std::vector<const TensorResultRow*>& tensors) {
    TieRowsByOutput ties;
    for (const TensorResultRow* t : tensors) {
        if (t->ties) {
            ties[t->name] = t->ties->named;
        }
    }
    return ties;
}

bool failures_tie_explained(const std::vector<const TensorResultRow*>& tensors) {
    bool any_failed = false;
    for (const TensorResultRow* t : tensors) {
        if (!t->pass) {
            any_failed = true;
            if (!t->ties || !t->ties->explained()) {
                return false;
            }
        }
    }
    return any_failed;
}

std::vector<Rescored> rescore_outputs(const RunData& data, double atol, double rtol) {
    CompareOptions options;
    options.atol = atol;
    options.rtol = rtol;
    options.error_map_max_side = 1; // only the verdicts are needed
    std::vector<Rescored> out;
    for (int trial = 0; trial < data.trial_count(); ++trial) {
        for (int rank = 0; rank < data.world_size(); ++rank) {
            const fs::path ref_path = output_path(data, trial, rank, Side::Reference);
            const fs::path cand_path = output_path(data, trial, rank, Side::Candidate);
            if (!fs::exists(ref_path) || !fs::exists(cand_path)) {
                continue;
            }
            Rescored r;
            r.trial = trial;
            r.rank = rank;
            try {
                const OutputSet ref = read_output_file(ref_path);
                const OutputSet cand = read_output_file(cand_path);
                const OutputComparison cmp =
                    compare_outputs(ref, cand, options, stored_tie_rows(data.tensors_of(trial, rank)));
                r.pass = cmp.pass;
                r.first_error = cmp.first_error;
                r.tie_explained = !cmp.pass && cmp.structure_errors.empty();
                for (const auto& t : cmp.tensors) {
                    if (!t.pass && !(t.ties && t.ties->explained())) {
                        r.tie_explained = false;
                    }
                    r.mismatch_count += t.mismatch_count;
                    r.worst_ratio = std::max(r.worst_ratio, t.worst_ratio);
                    r.min_passing_atol = std::max(r.min_passing_atol, t.min_passing_atol);
                }
            } catch (const std::exception& e) {
                r.first_error = e.what();
            }
            out.push_back(std::move(r));
        }
    }
    return out;
}

} // namespace pkbw::app
