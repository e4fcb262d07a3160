#include "store_recorder.h"

#include "pkbw/core/error.h"
#include "pkbw/core/paths.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/status.h"
#include "pkbw/core/store.h"
#include "pkbw/core/sweep_store.h"
#include "pkbw/core/trace_store.h"
#include "stored_perf.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <ostream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace pkbw::cli {
namespace {

class StoreRecorder : public Recorder {
public:
    explicit StoreRecorder(Store store)
        : store_(std::move(store)) {}

    int mark_stale_runs_aborted() override { return store_.mark_stale_runs_aborted(); }

    std::int64_t begin_run(const RunStart& run) override {
        RunRecord record;
        record.problem_id = run.problem_id;
        record.problem_stem = run.problem_stem;
        record.mode = parse_run_mode(run.mode).value_or(RunMode::Eval);
        record.backend = run.backend;
        record.world_size = run.world_size;
        record.dtype = run.dtype;
        record.m = run.m;
        record.n = run.n;
        record.atol = run.atol;
        record.rtol = run.rtol;
        record.trials = run.trials;
        record.seed = static_cast<std::int64_t>(run.seed);
        record.solution_path = run.solution_path;
        record.solution_sha256 = run.solution_sha256;
        record.solution_kind = run.solution_is_reference ? SolutionKind::Reference : SolutionKind::Candidate;
        record.generation = parse_generation_label(run.generation_folder);
        record.command_line = run.command_line;
        record.run_dir = run.run_dir;
        record.writer_host = run.host;
        std::int64_t id = store_.begin_run(record);
        run_dirs_[id] = run.run_dir;
        return id;
    }

    // The store has no update for the machine columns (they are known only after the ranks said
    // hello), so the hello data is kept as a run artifact.
    void set_environment(std::int64_t run_id, const RunEnvironment& environment) override {
        store_.set_run_environment(run_id, environment.gpu_names, environment.driver_version,
                                   environment.cuda_runtime_version, environment.nccl_runtime_version,
                                   environment.nccl_compiled_version);
        auto dir = run_dirs_.find(run_id);
        if (dir == run_dirs_.end())
            return;
        fs::path path = run_layout::environment(dir->second);
        json body = {{"gpu_names", environment.gpu_names},
                     {"driver_version", environment.driver_version},
                     {"cuda_runtime_version", environment.cuda_runtime_version},
                     {"nccl_runtime_version", environment.nccl_runtime_version},
                     {"nccl_compiled_version", environment.nccl_compiled_version}};
        std::ofstream(path) << body.dump(2) << "\n";
        add_artifact(run_id, {std::nullopt, std::nullopt, "environment", path.string()});
    }

    void add_rank_result(std::int64_t run_id, const RankRecord& record) override {
        RankResultRow row;
        row.run_id = run_id;
        row.trial = record.trial;
        row.rank = record.rank;
        row.side = Side::Candidate;
        row.outcome = parse_rank_outcome(record.outcome).value_or(RankOutcome::Error);
        row.phase = record.phase;
        row.message = record.message;
        row.exit_code = record.exit_code;
        row.signal = record.signal;
        store_.add_rank_result(row);
    }

    void add_tensor_result(std::int64_t run_id, const TensorRecord& record) override {
        TensorResultRow row = from_comparison(record.comparison);
        row.run_id = run_id;
        row.trial = record.trial;
        row.rank = record.rank;
        store_.add_tensor_result(row);
    }

    void add_artifact(std::int64_t run_id, const ArtifactRecord& record) override {
        ArtifactRow row;
        row.run_id = run_id;
        row.trial = record.trial;
        row.rank = record.rank;
        row.kind = record.kind;
        row.path = record.path;
        store_.add_artifact(row);
    }

    void add_perf_samples(std::int64_t run_id, const std::string& side, int rank, int block,
                          const std::vector<double>& samples) override {
        store_.add_perf_samples(run_id, parse_side(side).value_or(Side::Candidate), rank, block, samples);
    }

    void add_perf_summary(std::int64_t run_id, const std::string& side, int rank,
                          const std::string& statistic, double value) override {
        store_.add_perf_summary({run_id, parse_side(side).value_or(Side::Candidate), rank, statistic, value});
    }

    void add_traces(std::int64_t run_id, const std::vector<RankTrace>& traces) override {
        store_run_traces(store_, run_id, traces);
    }

    // A file that cannot be read is not archived; the run goes on (the GUI then says the source
    // was not archived rather than showing something else).
    void archive(std::int64_t run_id, const ArchiveRecord& record) override {
        try {
            if (record.path.empty())
                store_.archive_run_file(run_id, record.role, record.name, record.text, record.trial,
                                        record.rank);
            else
                archive_file(store_, run_id, record.role, record.path, record.trial, record.rank);
        } catch (const Error& failure) {
            std::fprintf(stderr, "pkbw: cannot archive %s with run %lld: %s\n", record.path.c_str(),
                         static_cast<long long>(run_id), failure.what());
        }
    }

    void set_flags(std::int64_t run_id, const std::vector<FlagRecord>& flags) override {
        std::vector<RunFlagRow> rows;
        for (const auto& flag : flags) {
            rows.push_back({run_id, static_cast<int>(rows.size()), flag.severity, flag.text, flag.reason});
        }
        store_.set_run_flags(run_id, rows);
    }

    void finish_run(std::int64_t run_id, const std::string& status, int exit_code,
                    const std::string& summary) override {
        store_.finish_run(run_id, parse_run_status(status).value_or(RunStatus::Error), exit_code, summary);
    }

private:
    Store store_;
    std::map<std::int64_t, std::string> run_dirs_;
};

std::string shorten(const std::string& text, std::size_t width) {
    std::string line = text.substr(0, text.find('\n'));
    return line.size() <= width ? line : line.substr(0, width - 3) + "...";
}

std::string number(double value) {
    if (std::isnan(value))
        return "nan";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g", value);
    return buffer;
}

json run_json(const RunRecord& run) {
    return {{"id", run.id},
            {"problem", run.problem_stem},
            {"mode", to_string(run.mode)},
            {"backend", run.backend},
            {"world_size", run.world_size},
            {"dtype", run.dtype},
            {"status", to_string(run.status)},
            {"exit_code", run.exit_code ? json(*run.exit_code) : json(nullptr)},
            {"summary", run.summary},
            {"solution_path", run.solution_path},
            {"solution_sha256", run.solution_sha256},
            {"generation", run.generation.label},
            {"started_at", run.started_at},
            {"ended_at", run.ended_at},
            {"run_dir", run.run_dir}};
}

} // namespace

std::unique_ptr<Recorder> open_store_recorder(const fs::path& path) {
    Store store = Store::open(path);
    store.check_before_write(); // a damaged file is refused here, before the run starts
    return std::make_unique<StoreRecorder>(std::move(store));
}

fs::path resolve_store_path(const std::optional<std::string>& flag) {
    if (flag && !flag->empty())
        return *flag;
    return default_store_path(); // honours $PKBW_STORE
}

fs::path default_cache_root() {
    return default_cache_dir();
}

// A read command's store (docs/store.md "Opening"): read-only, never created, migrated or switched to
// WAL. A missing or empty file is said on `err` (naming it) and gives nothing: a usage error.
std::optional<Store> open_for_reading(const fs::path& path, std::ostream& err) {
    std::error_code missing;
    if (!fs::exists(path, missing)) { // the phrase pkbw-gui's tests look for ("no store at PATH")
        err << "pkbw: no store at " << path.string()
            << " (no such file: a run creates it, or pass --store)\n";
        return std::nullopt;
    }
    try {
        return Store::open_read_only(path);
    } catch (const StoreError& error) {
        std::error_code ec;
        if (fs::exists(path, ec) && !(fs::is_regular_file(path, ec) && fs::file_size(path, ec) == 0))
            throw; // a file that is there and not empty: its own error (exit 3)
        err << "pkbw: " << error.what() << "\n";
        return std::nullopt;
    }
}

int list_runs(const fs::path& path, const RunsQuery& query, std::ostream& out, std::ostream& err) {
    RunFilter filter;
    if (query.problem) {
        const std::string& p = *query.problem;
        if (!p.empty() && p.size() < 6 &&
            std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }))
            filter.problem_id = std::stoi(p);
        else
            filter.problem_stem = p;
    }
    filter.generation_label = query.generation;
    filter.sweep_id = query.sweep;
    if (query.status) {
        filter.status = parse_run_status(*query.status);
        if (!filter.status) {
            err << "pkbw: unknown status '" << *query.status << "' (";
            for (auto s : {RunStatus::Running, RunStatus::Pass, RunStatus::Mismatch, RunStatus::CompileError,
                           RunStatus::Crash, RunStatus::Timeout, RunStatus::InvalidOutput, RunStatus::Error,
                           RunStatus::Interrupted, RunStatus::Aborted, RunStatus::InvalidTiming})
                err << (s == RunStatus::Running ? "" : ", ") << to_string(s);
            err << ")\n";
            return status::kExitUsage;
        }
    }
    std::optional<Store> opened = open_for_reading(path, err);
    if (!opened)
        return status::kExitUsage;
    const Store& store = *opened;
    if (query.sweep && !find_sweep(store, *query.sweep)) {
        err << "pkbw: no sweep " << *query.sweep << " in " << path.string() << "\n";
        return status::kExitUsage;
    }
    auto runs = store.list_runs(filter, {}, query.limit);
    if (query.json) { // JSON lines: one run per line, newest first
        for (const auto& run : runs) {
            json row = run_json(run);
            row["event"] = "run";
            row["perf"] = stored_perf_json(stored_perf(store.perf_summaries(run.id), run.status));
            out << row.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
        }
        return 0;
    }
    char line[640];
    std::snprintf(line, sizeof line, "%6s  %-24s %-28s %-6s %-5s %2s  %-14s %-18s %s\n", "id", "started",
                  "problem", "mode", "back", "W", "status", "speedup", "summary");
    out << line;
    for (const auto& run : runs) {
        const std::string speedup = speedup_cell(stored_perf(store.perf_summaries(run.id), run.status));
        std::snprintf(line, sizeof line, "%6lld  %-24s %-28s %-6s %-5s %2d  %-14s %-18s %s\n",
                      static_cast<long long>(run.id), run.started_at.c_str(),
                      shorten(run.problem_stem, 28).c_str(), std::string(to_string(run.mode)).c_str(),
                      run.backend.c_str(), run.world_size, std::string(to_string(run.status)).c_str(),
                      speedup.c_str(), shorten(run.summary, 60).c_str());
        out << line;
    }
    return 0;
}

namespace {
// What the mismatch line says about ties (issue 16): " (tie-explained: ...)" when the problem named tie
// rows for a failing output of this trial and rank; the output is named when several failed.
std::string tie_suffix(const std::vector<TensorResultRow>& tensors, int trial, int rank) {
    std::vector<const TensorResultRow*> failing;
    for (const auto& t : tensors)
        if (t.trial == trial && t.rank == rank && !t.pass)
            failing.push_back(&t);
    std::string text;
    for (const TensorResultRow* t : failing) {
        if (!t->ties || !t->ties->classified)
            continue;
        text += (text.empty() ? "" : "; ") + (failing.size() > 1 ? t->name + " " : std::string()) +
                tie_report_text(*t->ties);
    }
    return text.empty() ? text : " (" + text + ")";
}
// `pkbw show RUN --json`'s body, less its event.
json show_run_json(const RunRecord& run, const std::vector<RankResultRow>& ranks,
                   const std::vector<TensorResultRow>& tensors, const StoredPerf& perf,
                   const std::vector<ArtifactRow>& artifacts) {
    json body = run_json(run);
    body["command_line"] = run.command_line;
    body["host"] = run.writer_host;
    body["ranks"] = json::array();
    for (const auto& r : ranks) {
        body["ranks"].push_back({{"trial", r.trial},
                                 {"rank", r.rank},
                                 {"side", to_string(r.side)},
                                 {"outcome", to_string(r.outcome)},
                                 {"phase", r.phase},
                                 {"message", r.message}});
    }
    body["tensors"] = json::array();
    for (const auto& t : tensors) {
        body["tensors"].push_back({{"trial", t.trial},
                                   {"rank", t.rank},
                                   {"name", t.name},
                                   {"pass", t.pass},
                                   {"mismatch_count", t.mismatch_count},
                                   {"numel", t.numel},
                                   {"max_abs_error", t.max_abs_error},
                                   {"max_rel_error", t.max_rel_error},
                                   {"cand_all_zero", t.cand_summary.all_zero},
                                   {"cand_constant", t.cand_summary.constant},
                                   {"cand_nan_count", t.cand_summary.nan_count},
                                   {"ref_all_zero", t.ref_summary.all_zero},
                                   {"ref_constant", t.ref_summary.constant},
                                   {"ref_nan_count", t.ref_summary.nan_count},
                                   {"message", t.message},
                                   {"ties", t.ties ? protocol::to_json(*t.ties) : json(nullptr)}});
    }
    body["perf"] = stored_perf_json(perf);
    body["artifacts"] = json::array();
    for (const auto& a : artifacts)
        body["artifacts"].push_back({{"kind", a.kind}, {"path", a.path}});
    return body;
}

// One rank's line of a trial: its sides (reference first), each side's outcome, and their messages.
void print_rank_line(std::ostream& out, const std::vector<RankResultRow>& ranks, std::size_t i,
                     std::size_t next, const std::vector<TensorResultRow>& tensors) {
    const RankResultRow& r = ranks[i];
    out << "    rank " << r.rank << ": ";
    std::string messages;
    // The store orders sides as text; the reference is listed first, as it ran first.
    std::vector<const RankResultRow*> sides;
    for (std::size_t k = i; k < next; ++k)
        sides.push_back(&ranks[k]);
    std::stable_sort(sides.begin(), sides.end(),
                     [](const RankResultRow* a, const RankResultRow* b) { return a->side < b->side; });
    for (std::size_t k = 0; k < sides.size(); ++k) {
        const RankResultRow& side = *sides[k];
        if (sides.size() > 1)
            out << (k > 0 ? ", " : "") << to_string(side.side) << " ";
        out << to_string(side.outcome);
        if (side.phase != status::kPhaseCompare && !side.phase.empty() && side.outcome != RankOutcome::Ok)
            out << " in " << side.phase;
        if (side.outcome == RankOutcome::Mismatch)
            out << tie_suffix(tensors, r.trial, r.rank);
        if (!side.message.empty())
            messages += (messages.empty() ? "" : "; ") + side.message;
    }
    // The mismatch line already says what the tie reports say: the message keeps PKB's text only.
    for (const auto& t : tensors) {
        if (t.trial != r.trial || t.rank != r.rank || !t.ties || !t.ties->classified)
            continue;
        const std::string said = "; " + tie_report_text(*t.ties);
        for (auto at = messages.find(said); at != std::string::npos; at = messages.find(said))
            messages.erase(at, said.size());
    }
    if (!messages.empty())
        out << " | " << shorten(messages, 200);
    out << "\n";
}

// The lines of each output tensor of one rank in one trial.
void print_tensor_lines(std::ostream& out, const std::vector<TensorResultRow>& tensors, int trial, int rank) {
    for (const auto& t : tensors) {
        if (t.trial != trial || t.rank != rank)
            continue;
        out << "      " << t.name << ": " << (t.pass ? "pass" : "FAIL") << "  " << t.mismatch_count << "/"
            << t.numel << " mismatched, max_abs " << number(t.max_abs_error) << ", max_rel "
            << number(t.max_rel_error) << ", min passing atol " << number(t.min_passing_atol);
        // What the candidate wrote, where it differs in kind from the reference: an all-zero or
        // constant output can pass a loose tolerance without computing anything.
        const ValueSummary& c = t.cand_summary;
        if (c.all_zero && !t.ref_summary.all_zero)
            out << "  [candidate all zero]";
        else if (c.constant && !t.ref_summary.constant)
            out << "  [candidate constant " << number(c.min) << "]";
        if (c.nan_count > t.ref_summary.nan_count)
            out << "  [candidate " << c.nan_count << " NaN]";
        if (t.ties && t.ties->classified)
            out << "  [" << (t.ties->explained() ? "tie-explained" : "not tie-explained") << "]";
        else if (t.ties)
            out << "  [" << t.ties->named.rows.size() << " tie rows]";
        out << "\n";
    }
}

} // namespace

int show_run(const fs::path& path, std::int64_t run_id, bool as_json, std::ostream& out, std::ostream& err) {
    std::optional<Store> opened = open_for_reading(path, err);
    if (!opened)
        return status::kExitUsage;
    const Store& store = *opened;
    auto run = store.get_run(run_id);
    if (!run) {
        err << "pkbw: no run " << run_id << " in " << path.string() << "\n";
        return status::kExitUsage;
    }
    auto ranks = store.rank_results(run_id);
    auto tensors = store.tensor_results(run_id, false);
    auto artifacts = store.artifacts(run_id);
    const auto summaries = store.perf_summaries(run_id);
    const StoredPerf perf = stored_perf(summaries, run->status);
    if (as_json) {
        json body = show_run_json(*run, ranks, tensors, perf, artifacts);
        body["event"] = "run";
        out << body.dump(-1, ' ', false, json::error_handler_t::replace) << "\n"; // one JSON line
        return 0;
    }
    out << "run " << run->id << ": " << to_string(run->status);
    if (run->exit_code)
        out << " (exit " << *run->exit_code << ")";
    out << "\n  problem:   " << run->problem_stem << "  mode " << to_string(run->mode) << "  backend "
        << run->backend << "  W=" << run->world_size << "  dtype " << run->dtype
        << "\n  solution:  " << run->solution_path << "  sha256 " << run->solution_sha256.substr(0, 16)
        << "\n  generation: " << (run->generation.label.empty() ? "-" : run->generation.label)
        << "\n  started:   " << run->started_at << "  ended: " << run->ended_at << "  host "
        << run->writer_host << "\n  summary:   " << run->summary << "\n  run dir:   " << run->run_dir << "\n";
    // One line per rank and trial: a PKB run records the reference and the candidate as two rows of
    // the same (trial, rank); they are listed together ("reference ok, candidate mismatch").
    std::optional<int> current_trial;
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t next = i;
        while (next < ranks.size() && ranks[next].trial == ranks[i].trial &&
               ranks[next].rank == ranks[i].rank)
            ++next;
        const RankResultRow& r = ranks[i];
        if (r.trial != current_trial) {
            if (r.trial == kAfterLastResult)
                out << "  after the last trial result:\n";
            else
                out << "  trial " << r.trial << ":\n";
            current_trial = r.trial;
        }
        print_rank_line(out, ranks, i, next, tensors);
        print_tensor_lines(out, tensors, r.trial, r.rank);
        i = next;
    }
    // PKB's own per-trial speedups (imported runs): every trial, so their spread shows.
    std::string pkb_speedups;
    print_stored_perf(out, perf);
    for (const auto& row : summaries)
        if (row.statistic.starts_with("pkb_speedup.trial_"))
            pkb_speedups +=
                (pkb_speedups.empty() ? "" : ", ") + row.statistic.substr(12) + " " + number(row.value) + "x";
    if (!pkb_speedups.empty())
        out << "  PKB speedup per trial: " << pkb_speedups << "\n";
    if (!artifacts.empty()) {
        out << "  artifacts:\n";
        for (const auto& a : artifacts)
            out << "    " << a.kind << ": " << a.path << "\n";
    }
    return 0;
}

} // namespace pkbw::cli
