#include "pkbw/core/pkb_logs.h"

#include "pkbw/core/error.h"
#include "pkbw/core/torch_pt.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace pkbw {
namespace fs = std::filesystem;
namespace {

// "<prefix><digits><suffix>" -> the number; nullopt otherwise.
std::optional<int> numbered(const std::string& name, std::string_view prefix, std::string_view suffix) {
    if (!name.starts_with(prefix) || !name.ends_with(suffix) ||
        name.size() <= prefix.size() + suffix.size()) {
        return std::nullopt;
    }
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::nullopt;
    }
    return std::stoi(digits);
}

std::vector<fs::directory_entry> sorted_entries(const fs::path& dir) {
    std::vector<fs::directory_entry> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        out.push_back(*it);
    }
    if (ec) {
        throw FormatError(dir.string() + ": cannot list: " + ec.message());
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
    return out;
}

bool is_dir(const fs::directory_entry& e) {
    std::error_code ec;
    return e.is_directory(ec);
}
bool is_file(const fs::directory_entry& e) {
    std::error_code ec;
    return e.is_regular_file(ec);
}

// The job files directly in `dir`; nullopt when it has no rank file at all.
std::optional<PkbJob> scan_job(const fs::path& dir, std::vector<std::string>& warnings) {
    PkbJob job;
    job.dir = dir;
    std::map<int, PkbRankFiles> ranks;
    auto rank_entry = [&](int r) -> PkbRankFiles& {
        auto& f = ranks[r];
        f.rank = r;
        return f;
    };
    for (const auto& e : sorted_entries(dir)) {
        const std::string name = e.path().filename().string();
        if (is_file(e)) {
            if (name.ends_with(".pt")) {
                job.pt_names.push_back(name);
                if (const auto r = numbered(name, "rank_", ".pt")) {
                    rank_entry(*r).pt = e.path();
                } else {
                    warnings.push_back(e.path().string() + ": not a rank_<r>.pt name; compared by name only");
                }
            } else if (const auto r = numbered(name, "rank_", "_perf.json")) {
                rank_entry(*r).perf = e.path();
            }
        } else if (is_dir(e) && name == "traces") {
            for (const auto& t : sorted_entries(e.path())) {
                if (const auto r = numbered(t.path().filename().string(), "rank_", ".json");
                    r && is_file(t)) {
                    rank_entry(*r).trace = t.path();
                }
            }
        }
    }
    if (ranks.empty() && job.pt_names.empty()) {
        return std::nullopt;
    }
    for (auto& [r, files] : ranks) {
        job.ranks.push_back(std::move(files));
    }
    return job;
}

int job_ranks(const std::optional<PkbJob>& job) {
    return job && !job->ranks.empty() ? job->ranks.back().rank + 1 : 0;
}

struct BackendDir {
    std::optional<PkbJob> flat;
    std::map<int, PkbJob> trials;
};

} // namespace

PkbPerf parse_pkb_perf(std::string_view text, const std::string& source) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        throw FormatError(source + ": not valid JSON: " + e.what());
    }
    if (!j.is_object()) {
        throw FormatError(source + ": not a JSON object");
    }
    PkbPerf perf;
    auto field = [&](const char* key, double& out, bool required) {
        if (!j.contains(key)) {
            if (required) {
                throw FormatError(source + ": field '" + key + "' is missing");
            }
            return;
        }
        if (!j[key].is_number()) {
            throw FormatError(source + ": field '" + key + "' is not a number");
        }
        out = j[key].get<double>();
    };
    field("wall_time_ms", perf.wall_time_ms, true);
    field("wall_time_total_ms", perf.wall_time_total_ms, false);
    field("wall_time_std_ms", perf.wall_time_std_ms, false);
    field("min_time_ms", perf.min_time_ms, false);
    field("max_time_ms", perf.max_time_ms, false);
    field("iterations", perf.iterations, false);
    field("warmup_iterations", perf.warmup_iterations, false);
    field("num_input_groups", perf.num_input_groups, false);
    field("l2_cache_size_bytes", perf.l2_cache_size_bytes, false);
    field("timed_tensor_bytes", perf.timed_tensor_bytes, false);
    if (!(perf.wall_time_ms >= 0)) {
        throw FormatError(source + ": field 'wall_time_ms' is negative");
    }
    perf.raw = std::move(j);
    return perf;
}

PkbPerf read_pkb_perf(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw FormatError(path.string() + ": cannot open");
    }
    std::ostringstream text;
    text << in.rdbuf();
    return parse_pkb_perf(text.str(), path.string());
}

namespace {

// The problem_<stem> folders of PKB's logs folder `dir` (or `dir` itself when it is one), sorted.
std::vector<fs::path> problem_folders(const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        throw FormatError(dir.string() + ": not a folder");
    }
    std::vector<fs::path> problems;
    if (dir.filename().string().starts_with("problem_")) {
        problems.push_back(dir);
    } else {
        for (const auto& e : sorted_entries(dir)) {
            if (is_dir(e) && e.path().filename().string().starts_with("problem_")) {
                problems.push_back(e.path());
            }
        }
    }
    if (problems.empty()) {
        throw FormatError(dir.string() + ": holds no problem_<stem> folders (PKB's logs layout)");
    }
    return problems;
}

// A problem folder's backends (reference, cuda, ...): each with its flat job (perf) and its trial_<k>
// jobs (eval); a folder with neither is skipped with a warning.
std::map<std::string, BackendDir> scan_backends(const fs::path& problem, std::vector<std::string>& warnings) {
    std::map<std::string, BackendDir> backends;
    for (const auto& e : sorted_entries(problem)) {
        if (!is_dir(e)) {
            continue; // comparison_<backend>.json and other files
        }
        BackendDir b;
        b.flat = scan_job(e.path(), warnings);
        for (const auto& t : sorted_entries(e.path())) {
            const auto k = numbered(t.path().filename().string(), "trial_", "");
            if (k && is_dir(t)) {
                if (auto job = scan_job(t.path(), warnings)) {
                    b.trials.emplace(*k, std::move(*job));
                } else {
                    warnings.push_back(t.path().string() + ": no rank files; trial skipped");
                }
            }
        }
        if (!b.flat && b.trials.empty()) {
            warnings.push_back(e.path().string() + ": no rank files; folder skipped");
            continue;
        }
        backends.emplace(e.path().filename().string(), std::move(b));
    }
    return backends;
}

// The eval run of backend `b`: a trial for every index either it or the reference has, each side's
// job where it has one (`run` carries the problem and backend).
PkbRun eval_run(PkbRun run, const BackendDir& b, const BackendDir* ref, bool is_ref) {
    std::set<int> indices;
    for (const auto& [k, job] : b.trials) {
        indices.insert(k);
    }
    if (ref && !is_ref) {
        for (const auto& [k, job] : ref->trials) {
            indices.insert(k);
        }
    }
    for (const int k : indices) {
        PkbTrial t;
        t.trial = k;
        const auto own = b.trials.find(k);
        const std::optional<PkbJob> mine =
            own == b.trials.end() ? std::nullopt : std::optional<PkbJob>(own->second);
        if (is_ref) {
            t.reference = mine;
        } else {
            t.candidate = mine;
            if (ref && ref->trials.count(k)) {
                t.reference = ref->trials.at(k);
            }
        }
        run.world_size = std::max({run.world_size, job_ranks(t.reference), job_ranks(t.candidate)});
        run.trials.push_back(std::move(t));
    }
    return run;
}

} // namespace

PkbLogs scan_pkb_logs(const fs::path& dir) {
    PkbLogs logs;
    logs.root = dir;
    for (const auto& problem : problem_folders(dir)) {
        const std::string stem = problem.filename().string().substr(8);
        std::optional<int> id;
        std::size_t digits = 0;
        while (digits < stem.size() && digits < 6 && std::isdigit(static_cast<unsigned char>(stem[digits]))) {
            ++digits;
        }
        if (digits > 0) {
            id = std::stoi(stem.substr(0, digits));
        }
        const std::map<std::string, BackendDir> backends = scan_backends(problem, logs.warnings);
        const auto ref_it = backends.find("reference");
        const BackendDir* ref = ref_it == backends.end() ? nullptr : &ref_it->second;
        const bool candidates = backends.size() > (ref ? 1u : 0u);
        for (const auto& [name, b] : backends) {
            const bool is_ref = name == "reference";
            if (is_ref && candidates) {
                continue; // paired with each candidate instead
            }
            PkbRun run;
            run.problem_stem = stem;
            run.problem_id = id;
            run.backend = name;
            run.problem_dir = problem;
            if (b.flat) {
                PkbRun perf = run;
                perf.eval = false;
                PkbTrial t;
                t.reference = is_ref ? b.flat : (ref ? ref->flat : std::nullopt);
                if (!is_ref) {
                    t.candidate = b.flat;
                }
                perf.world_size = std::max(job_ranks(t.reference), job_ranks(t.candidate));
                perf.trials.push_back(std::move(t));
                logs.runs.push_back(std::move(perf));
            }
            if (!b.trials.empty()) {
                run.eval = true;
                logs.runs.push_back(eval_run(run, b, ref, is_ref));
            }
        }
    }
    return logs;
}

PkbTrialComparison compare_pkb_trial(const PkbTrial& trial, const CompareOptions& options) {
    PkbTrialComparison out;
    out.trial = trial.trial;
    const auto names = [](const std::optional<PkbJob>& j) {
        return j ? j->pt_names : std::vector<std::string>{};
    };
    const auto ref_names = names(trial.reference), cand_names = names(trial.candidate);
    if (ref_names.empty() || cand_names.empty()) {
        out.result = "missing_artifacts";
        out.first_error =
            std::string("no .pt files for the ") + (ref_names.empty() ? "reference" : "candidate");
        return out;
    }
    if (ref_names != cand_names) {
        out.result = "path_mismatch";
        out.first_error = "artifact names differ: reference has " + std::to_string(ref_names.size()) +
                          " .pt files, candidate " + std::to_string(cand_names.size());
        return out;
    }
    std::map<int, const PkbRankFiles*> cand_ranks;
    for (const auto& f : trial.candidate->ranks) {
        cand_ranks[f.rank] = &f;
    }
    // PKB walks files in text order (rank_10 before rank_2); the first error follows that order.
    std::map<std::string, std::string> errors_by_name;
    bool load_failed = false, mismatch = false;
    for (const auto& ref : trial.reference->ranks) {
        const auto it = cand_ranks.find(ref.rank);
        if (ref.pt.empty() || it == cand_ranks.end() || it->second->pt.empty()) {
            continue; // rank_<r>_perf.json without its .pt: the name lists above already agree
        }
        PkbRankComparison rc;
        rc.rank = ref.rank;
        const std::string file = ref.pt.filename().string();
        try {
            const OutputSet a = read_torch_pt(ref.pt.string());
            const OutputSet b = read_torch_pt(it->second->pt.string());
            rc.comparison = compare_outputs(a, b, options);
            if (!rc.comparison.pass) {
                mismatch = true;
                errors_by_name.emplace(file, file + ": " + rc.comparison.first_error);
            }
        } catch (const Error& e) {
            rc.load_error = e.what();
            load_failed = true;
            errors_by_name.emplace(file, e.what());
        }
        out.ranks.push_back(std::move(rc));
    }
    out.result = load_failed ? "load_error" : mismatch ? "tensor_mismatch" : "match";
    if (!errors_by_name.empty()) {
        out.first_error = errors_by_name.begin()->second;
    }
    return out;
}

namespace {
PkbSidePerf side_perf(const std::optional<PkbJob>& job) {
    PkbSidePerf side;
    if (!job) {
        return side;
    }
    std::vector<double> times;
    for (const auto& f : job->ranks) {
        if (side.ranks.size() <= static_cast<std::size_t>(f.rank)) {
            side.ranks.resize(static_cast<std::size_t>(f.rank) + 1);
        }
        if (!f.perf) {
            continue;
        }
        try {
            side.ranks[static_cast<std::size_t>(f.rank)] = read_pkb_perf(*f.perf);
            times.push_back(side.ranks[static_cast<std::size_t>(f.rank)]->wall_time_ms);
        } catch (const Error& e) {
            side.errors.emplace_back(e.what());
        }
    }
    if (!times.empty()) {
        side.max_ms = *std::max_element(times.begin(), times.end());
        double sum = 0;
        for (const double t : times) {
            sum += t;
        }
        side.mean_ms = sum / static_cast<double>(times.size());
    }
    return side;
}
} // namespace

PkbTrialPerf summarize_pkb_perf(const PkbTrial& trial) {
    PkbTrialPerf perf;
    perf.reference = side_perf(trial.reference);
    perf.candidate = side_perf(trial.candidate);
    if (perf.reference.max_ms && perf.candidate.max_ms) {
        // compare_performance.py: 0 when the candidate's time is not positive.
        perf.speedup = *perf.candidate.max_ms > 0 ? *perf.reference.max_ms / *perf.candidate.max_ms : 0.0;
    }
    return perf;
}

} // namespace pkbw
