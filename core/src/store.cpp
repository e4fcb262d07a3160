// The store's writer side: enum texts, run records, results, perf samples, artifacts and the
// recovery of runs whose writer died. Readers are in store_read.cpp.
#include "pkbw/core/protocol.h"
#include "pkbw/core/status.h"
#include "store_db.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <signal.h>
#include <sstream>
#include <unistd.h>

#ifndef PKBW_VERSION
#define PKBW_VERSION "unknown"
#endif

namespace pkbw {

namespace {

template <class E, std::size_t N>
std::optional<E> parse_enum(std::string_view text, const std::array<std::string_view, N>& names) {
    for (std::size_t i = 0; i < N; ++i)
        if (names[i] == text)
            return static_cast<E>(i);
    return std::nullopt;
}

constexpr std::array<std::string_view, 3> kModeNames{status::kModeDryrun, status::kModeEval,
                                                     status::kModePerf};
// A run's status is a rank's where they share a word: core/status.h's constants, so the two cannot drift.
constexpr std::array<std::string_view, 11> kStatusNames{
    "running",      status::kPass, status::kMismatch,      "compile_error",
    status::kCrash, "timeout",     status::kInvalidOutput, status::kError,
    "interrupted",  "aborted",     status::kInvalidTiming};
constexpr std::array<std::string_view, 2> kKindNames{"reference", "candidate"};
constexpr std::array<std::string_view, 3> kSideNames{"reference", "candidate", "bare_nccl"};
constexpr std::array<std::string_view, 8> kOutcomeNames{
    "ok",      status::kMismatch,      "compile_error", status::kCrash,
    "timeout", status::kInvalidOutput, status::kError,  "skipped"};

} // namespace

std::string_view to_string(RunMode mode) {
    return kModeNames.at(static_cast<std::size_t>(mode));
}
std::string_view to_string(RunStatus status) {
    return kStatusNames.at(static_cast<std::size_t>(status));
}
std::string_view to_string(SolutionKind kind) {
    return kKindNames.at(static_cast<std::size_t>(kind));
}
std::string_view to_string(Side side) {
    return kSideNames.at(static_cast<std::size_t>(side));
}
std::string_view to_string(RankOutcome outcome) {
    return kOutcomeNames.at(static_cast<std::size_t>(outcome));
}
std::optional<RunMode> parse_run_mode(std::string_view text) {
    return parse_enum<RunMode>(text, kModeNames);
}
std::optional<RunStatus> parse_run_status(std::string_view text) {
    return parse_enum<RunStatus>(text, kStatusNames);
}
std::optional<SolutionKind> parse_solution_kind(std::string_view text) {
    return parse_enum<SolutionKind>(text, kKindNames);
}
std::optional<Side> parse_side(std::string_view text) {
    return parse_enum<Side>(text, kSideNames);
}
std::optional<RankOutcome> parse_rank_outcome(std::string_view text) {
    return parse_enum<RankOutcome>(text, kOutcomeNames);
}

std::string utc_now_iso8601() {
    auto now = std::chrono::system_clock::now();
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    std::time_t seconds = static_cast<std::time_t>(ms / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[64];
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                  static_cast<int>(ms % 1000));
    return text;
}

TensorResultRow from_comparison(const TensorComparison& c) {
    TensorResultRow row;
    row.name = c.name;
    row.pass = c.pass;
    row.shape_match = c.shape_match;
    row.ref_shape = c.ref_shape;
    row.cand_shape = c.cand_shape;
    row.ref_dtype = std::string(dtype_name(c.ref_dtype));
    row.cand_dtype = std::string(dtype_name(c.cand_dtype));
    row.dtype_match = c.dtype_match;
    row.numel = c.numel;
    row.mismatch_count = c.mismatch_count;
    row.mismatch_fraction = c.mismatch_fraction;
    row.max_abs_error = c.max_abs_error;
    row.max_rel_error = c.max_rel_error;
    row.worst_ratio = c.worst_ratio;
    row.first_mismatch = c.first_mismatch;
    row.worst_mismatch = c.worst_mismatch;
    row.max_ulp = c.max_ulp;
    row.min_passing_atol = c.min_passing_atol;
    row.ref_summary = c.ref_summary;
    row.cand_summary = c.cand_summary;
    row.error_map = c.error_map;
    row.message = c.message;
    row.ties = c.ties;
    row.length_bound = c.length_bound;
    row.ref_length = c.ref_length;
    row.cand_length = c.cand_length;
    return row;
}

namespace {

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0)
        return "unknown-host";
    return name;
}

// Field 22 of /proc/<pid>/stat: the process start time in clock ticks after boot. With the pid it
// identifies a process even after the pid is recycled. Absent where there is no /proc.
std::optional<std::int64_t> process_start_ticks(std::int64_t pid) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!file || !std::getline(file, stat))
        return std::nullopt;
    auto close = stat.rfind(')'); // the command name may hold spaces and parentheses
    if (close == std::string::npos)
        return std::nullopt;
    std::istringstream fields(stat.substr(close + 1));
    std::string field;
    for (int index = 3; index <= 22 && fields >> field; ++index)
        if (index == 22)
            return std::stoll(field);
    return std::nullopt;
}

bool process_alive(std::int64_t pid, std::optional<std::int64_t> start_ticks) {
    if (pid <= 0)
        return false;
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)
        return false;
    if (!start_ticks)
        return true;
    auto now = process_start_ticks(pid);
    return !now || *now == *start_ticks;
}

std::string json_text(const nlohmann::json& value) {
    return value.dump();
}

std::vector<unsigned char> error_map_blob(const ErrorMap& map) {
    std::vector<unsigned char> blob(map.ratio.size() * 4);
    for (std::size_t i = 0; i < map.ratio.size(); ++i) {
        auto bits = std::bit_cast<std::uint32_t>(map.ratio[i]);
        for (int b = 0; b < 4; ++b)
            blob[i * 4 + b] = static_cast<unsigned char>(bits >> (8 * b)); // little-endian on every host
    }
    return blob;
}

// Writer statements, cached per connection (Impl::cached keys them by address).
constexpr const char* kInsertRun = R"sql(INSERT INTO runs (
    problem_id, problem_stem, mode, backend, world_size, dtype, m, n, input_shapes, atol, rtol, trials,
    seed, solution_path, solution_sha256, solution_kind, generation_label, generation_backend,
    generation_precision, generation_hardware, generation_provider, generation_model, generation_parsed,
    writer_host, writer_pid, writer_start_ticks, gpu_names, driver_version, cuda_runtime_version,
    cuda_compiled_version, nccl_runtime_version, nccl_compiled_version, pkbw_version, command_line,
    started_at, ended_at, status, exit_code, summary, run_dir)
    VALUES (:problem_id, :problem_stem, :mode, :backend, :world_size, :dtype, :m, :n, :input_shapes,
    :atol, :rtol, :trials, :seed, :solution_path, :solution_sha256, :solution_kind, :generation_label,
    :generation_backend, :generation_precision, :generation_hardware, :generation_provider,
    :generation_model, :generation_parsed, :writer_host, :writer_pid, :writer_start_ticks, :gpu_names,
    :driver_version, :cuda_runtime_version, :cuda_compiled_version, :nccl_runtime_version,
    :nccl_compiled_version, :pkbw_version, :command_line, :started_at, :ended_at, :status, :exit_code,
    :summary, :run_dir))sql";

constexpr const char* kInsertRankResult = R"sql(INSERT INTO rank_results (run_id, trial, rank, side,
    outcome, phase, message, exit_code, signal, started_at, ended_at, wall_ms, compile_ms)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13))sql";

constexpr const char* kInsertTensorResult = R"sql(INSERT INTO tensor_results (run_id, trial, rank, name,
    pass, shape_match, ref_shape, cand_shape, ref_dtype, cand_dtype, dtype_match, numel, mismatch_count,
    mismatch_fraction, max_abs_error, max_rel_error, worst_ratio, first_mismatch, worst_mismatch,
    max_ulp, min_passing_atol, ref_nan_count, ref_inf_count, ref_zero_count, ref_min, ref_max, ref_mean,
    ref_all_zero, ref_constant, cand_nan_count, cand_inf_count, cand_zero_count, cand_min, cand_max,
    cand_mean, cand_all_zero, cand_constant, message, error_map_src_rows, error_map_src_cols,
    error_map_rows, error_map_cols, error_map, ties, length_bound, ref_length, cand_length)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
    ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37, ?38, ?39, ?40,
    ?41, ?42, ?43, ?44, ?45, ?46, ?47))sql";

constexpr const char* kInsertPerfSample =
    "INSERT INTO perf_samples (run_id, side, rank, block, iteration, ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
constexpr std::size_t kPerfRowsPerInsert = 100;
const std::string kInsertPerfSamplesText = [] {
    std::string sql = "INSERT INTO perf_samples (run_id, side, rank, block, iteration, ms) VALUES ";
    for (std::size_t row = 0; row < kPerfRowsPerInsert; ++row) {
        auto parameter = 5 + 2 * row;
        sql += (row ? ", (" : "(") + std::string("?1, ?2, ?3, ?4, ?") + std::to_string(parameter) + ", ?" +
               std::to_string(parameter + 1) + ")";
    }
    return sql;
}();
const char* const kInsertPerfSamples = kInsertPerfSamplesText.c_str();

} // namespace

std::int64_t Store::begin_run(const RunRecord& r) {
    detail::WriteScope scope(*impl_, "begin_run");
    auto use = impl_->cached(kInsertRun);
    detail::Stmt& s = *use;
    bool self = r.writer_pid == 0;
    std::int64_t pid = self ? static_cast<std::int64_t>(getpid()) : r.writer_pid;
    auto start_ticks = self ? process_start_ticks(pid) : r.writer_start_ticks;
    s.bind(":problem_id", r.problem_id).bind(":problem_stem", r.problem_stem);
    s.bind(":mode", to_string(r.mode)).bind(":backend", r.backend).bind(":world_size", r.world_size);
    s.bind(":dtype", r.dtype)
        .bind(":m", r.m)
        .bind(":n", r.n)
        .bind(":input_shapes", json_text(r.input_shapes));
    s.bind(":atol", r.atol).bind(":rtol", r.rtol).bind(":trials", r.trials).bind(":seed", r.seed);
    s.bind(":solution_path", r.solution_path).bind(":solution_sha256", r.solution_sha256);
    s.bind(":solution_kind", to_string(r.solution_kind));
    const auto& g = r.generation;
    s.bind(":generation_label", g.label).bind(":generation_backend", g.backend);
    s.bind(":generation_precision", g.precision).bind(":generation_hardware", g.hardware);
    s.bind(":generation_provider", g.provider).bind(":generation_model", g.model);
    s.bind(":generation_parsed", g.parsed);
    s.bind(":writer_host", r.writer_host.empty() ? host_name() : r.writer_host);
    s.bind(":writer_pid", pid).bind(":writer_start_ticks", start_ticks);
    s.bind(":gpu_names", json_text(r.gpu_names)).bind(":driver_version", r.driver_version);
    s.bind(":cuda_runtime_version", r.cuda_runtime_version)
        .bind(":cuda_compiled_version", r.cuda_compiled_version);
    s.bind(":nccl_runtime_version", r.nccl_runtime_version)
        .bind(":nccl_compiled_version", r.nccl_compiled_version);
    s.bind(":pkbw_version", r.pkbw_version.empty() ? std::string(PKBW_VERSION) : r.pkbw_version);
    s.bind(":command_line", json_text(r.command_line));
    s.bind(":started_at", r.started_at.empty() ? utc_now_iso8601() : r.started_at);
    if (r.ended_at.empty())
        s.bind_null(s.parameter_index(":ended_at"));
    else
        s.bind(":ended_at", r.ended_at);
    s.bind(":status", to_string(r.status)).bind(":exit_code", r.exit_code);
    s.bind(":summary", r.summary).bind(":run_dir", detail::path_to_record(*impl_, r.run_dir));
    s.run();
    std::int64_t id = sqlite3_last_insert_rowid(impl_->db);
    scope.commit();
    return id;
}

void Store::finish_run(std::int64_t run_id, RunStatus status, std::optional<int> exit_code,
                       std::string_view summary, std::string_view ended_at) {
    detail::WriteScope scope(*impl_, "finish_run");
    detail::Stmt s(impl_->db,
                   "UPDATE runs SET status = ?1, exit_code = ?2, summary = ?3, ended_at = ?4 WHERE id = ?5",
                   impl_->path);
    s.bind(1, to_string(status)).bind(2, exit_code).bind(3, summary);
    s.bind(4, ended_at.empty() ? utc_now_iso8601() : std::string(ended_at)).bind(5, run_id);
    s.run();
    if (sqlite3_changes(impl_->db) != 1)
        throw StoreError("store " + impl_->path.string() + ": finish_run: no run " + std::to_string(run_id));
    scope.commit();
}

void Store::set_run_environment(std::int64_t run_id, const std::vector<std::string>& gpu_names,
                                std::string_view driver_version, std::string_view cuda_runtime_version,
                                std::string_view nccl_runtime_version,
                                std::string_view nccl_compiled_version) {
    detail::WriteScope scope(*impl_, "set_run_environment");
    detail::Stmt s(impl_->db,
                   "UPDATE runs SET gpu_names = ?1, driver_version = ?2, cuda_runtime_version = ?3, "
                   "nccl_runtime_version = ?4, nccl_compiled_version = ?5 WHERE id = ?6",
                   impl_->path);
    s.bind(1, json_text(gpu_names)).bind(2, driver_version).bind(3, cuda_runtime_version);
    s.bind(4, nccl_runtime_version).bind(5, nccl_compiled_version).bind(6, run_id);
    s.run();
    if (sqlite3_changes(impl_->db) != 1)
        throw StoreError("store " + impl_->path.string() + ": set_run_environment: no run " +
                         std::to_string(run_id));
    scope.commit();
}

void Store::add_rank_result(const RankResultRow& r) {
    detail::WriteScope scope(*impl_, "add_rank_result");
    auto use = impl_->cached(kInsertRankResult);
    detail::Stmt& s = *use;
    s.bind(1, r.run_id).bind(2, r.trial).bind(3, r.rank).bind(4, to_string(r.side));
    s.bind(5, to_string(r.outcome))
        .bind(6, r.phase)
        .bind(7, r.message)
        .bind(8, r.exit_code)
        .bind(9, r.signal);
    if (r.started_at.empty())
        s.bind_null(10);
    else
        s.bind(10, r.started_at);
    if (r.ended_at.empty())
        s.bind_null(11);
    else
        s.bind(11, r.ended_at);
    s.bind(12, r.wall_ms).bind(13, r.compile_ms);
    s.run();
    scope.commit();
}

void Store::add_tensor_result(const TensorResultRow& r) {
    detail::WriteScope scope(*impl_, "add_tensor_result");
    auto use = impl_->cached(kInsertTensorResult);
    detail::Stmt& s = *use;
    const auto& map = r.error_map;
    if (map.ratio.size() != static_cast<std::size_t>(map.rows) * static_cast<std::size_t>(map.cols))
        throw StoreError("store " + impl_->path.string() + ": run " + std::to_string(r.run_id) + " tensor '" +
                         r.name + "': error map has " + std::to_string(map.ratio.size()) + " cells, not " +
                         std::to_string(map.rows) + " x " + std::to_string(map.cols));
    s.bind(1, r.run_id)
        .bind(2, r.trial)
        .bind(3, r.rank)
        .bind(4, r.name)
        .bind(5, r.pass)
        .bind(6, r.shape_match);
    s.bind(7, json_text(r.ref_shape)).bind(8, json_text(r.cand_shape)).bind(9, r.ref_dtype);
    s.bind(10, r.cand_dtype).bind(11, r.dtype_match).bind(12, r.numel).bind(13, r.mismatch_count);
    s.bind(14, r.mismatch_fraction)
        .bind(15, r.max_abs_error)
        .bind(16, r.max_rel_error)
        .bind(17, r.worst_ratio);
    s.bind(18, r.first_mismatch).bind(19, r.worst_mismatch);
    if (r.max_ulp) {
        constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        s.bind(20, static_cast<std::int64_t>(std::min(*r.max_ulp, kMax)));
    } else {
        s.bind_null(20);
    }
    s.bind(21, r.min_passing_atol);
    int column = 22;
    for (const ValueSummary* v : {&r.ref_summary, &r.cand_summary}) {
        s.bind(column, v->nan_count).bind(column + 1, v->inf_count).bind(column + 2, v->zero_count);
        s.bind(column + 3, v->min).bind(column + 4, v->max).bind(column + 5, v->mean);
        s.bind(column + 6, v->all_zero).bind(column + 7, v->constant);
        column += 8;
    }
    s.bind(38, r.message).bind(39, map.source_rows).bind(40, map.source_cols).bind(41, map.rows);
    s.bind(42, map.cols);
    if (map.ratio.empty()) {
        s.bind_null(43);
    } else {
        auto blob = error_map_blob(map);
        s.bind_blob(43, blob.data(), blob.size());
    }
    if (r.ties)
        s.bind(44, protocol::to_json(*r.ties).dump());
    else
        s.bind_null(44);
    s.bind(45, r.length_bound).bind(46, r.ref_length).bind(47, r.cand_length); // NULL: fixed shape
    s.run();
    scope.commit();
}

void Store::add_perf_samples(std::int64_t run_id, Side side, int rank, int block, std::span<const double> ms,
                             int first_iteration) {
    detail::WriteScope scope(*impl_, "add_perf_samples");
    // Rows go kPerfRowsPerInsert at a time through one multi-row INSERT, the rest one by one: a third
    // of the per-row cost of single-row statements. ?1-?4 (run, side, rank, block) are shared.
    std::size_t i = 0;
    for (const char* sql : {kInsertPerfSamples, kInsertPerfSample}) {
        std::size_t rows = sql == kInsertPerfSamples ? kPerfRowsPerInsert : 1;
        auto use = impl_->cached(sql);
        detail::Stmt& s = *use;
        s.bind(1, run_id).bind(2, static_cast<int>(side)).bind(3, rank).bind(4, block);
        for (; i + rows <= ms.size(); i += rows) {
            for (std::size_t row = 0; row < rows; ++row) {
                int parameter = 5 + 2 * static_cast<int>(row);
                s.bind(parameter, first_iteration + static_cast<int>(i + row))
                    .bind(parameter + 1, ms[i + row]);
            }
            s.run();
        }
    }
    scope.commit();
}

void Store::add_perf_summary(const PerfSummaryRow& r) {
    detail::WriteScope scope(*impl_, "add_perf_summary");
    detail::Stmt s(impl_->db,
                   "INSERT OR REPLACE INTO perf_summaries (run_id, side, rank, statistic, value) "
                   "VALUES (?1, ?2, ?3, ?4, ?5)",
                   impl_->path);
    s.bind(1, r.run_id).bind(2, to_string(r.side)).bind(3, r.rank).bind(4, r.statistic).bind(5, r.value);
    s.run();
    scope.commit();
}

void Store::set_run_flags(std::int64_t run_id, const std::vector<RunFlagRow>& flags) {
    for (const auto& flag : flags) {
        if (flag.severity != "info" && flag.severity != "suspect" && flag.severity != "warning") {
            throw StoreError("store " + impl_->path.string() + ": run " + std::to_string(run_id) +
                             ": flag '" + flag.text.substr(0, 80) + "' has severity '" + flag.severity +
                             "' (info, suspect or warning)");
        }
    }
    detail::WriteScope scope(*impl_, "set_run_flags");
    detail::Stmt clear(impl_->db, "DELETE FROM run_flags WHERE run_id = ?1", impl_->path);
    clear.bind(1, run_id);
    clear.run();
    detail::Stmt s(impl_->db,
                   "INSERT INTO run_flags (run_id, seq, severity, text, reason) VALUES (?1, ?2, ?3, ?4, ?5)",
                   impl_->path);
    for (std::size_t i = 0; i < flags.size(); ++i) {
        s.bind(1, run_id)
            .bind(2, static_cast<int>(i))
            .bind(3, flags[i].severity)
            .bind(4, flags[i].text)
            .bind(5, flags[i].reason);
        s.run();
        s.reset();
    }
    scope.commit();
}

std::int64_t Store::add_artifact(const ArtifactRow& r) {
    detail::WriteScope scope(*impl_, "add_artifact");
    detail::Stmt s(impl_->db,
                   "INSERT INTO artifacts (run_id, trial, rank, kind, path) VALUES (?1, ?2, ?3, ?4, ?5)",
                   impl_->path);
    s.bind(1, r.run_id)
        .bind(2, r.trial)
        .bind(3, r.rank)
        .bind(4, r.kind)
        .bind(5, detail::path_to_record(*impl_, r.path));
    s.run();
    std::int64_t id = sqlite3_last_insert_rowid(impl_->db);
    scope.commit();
    return id;
}

int Store::mark_stale_runs_aborted() {
    detail::WriteScope scope(*impl_, "mark_stale_runs_aborted");
    struct Stale {
        std::int64_t id, pid;
        std::string summary;
    };
    std::vector<Stale> stale;
    std::string host = host_name();
    {
        detail::Stmt s(impl_->db,
                       "SELECT id, writer_pid, writer_start_ticks, summary FROM runs "
                       "WHERE status = 'running' AND writer_host = ?1",
                       impl_->path);
        s.bind(1, host);
        while (s.step())
            if (!process_alive(s.i64(1), s.opt_i64(2)))
                stale.push_back({s.i64(0), s.i64(1), s.text(3)});
    }
    detail::Stmt update(impl_->db,
                        "UPDATE runs SET status = 'aborted', ended_at = ?1, summary = ?2 WHERE id = ?3",
                        impl_->path);
    std::string now = utc_now_iso8601();
    for (const auto& run : stale) {
        std::string note = "aborted: writer process " + std::to_string(run.pid) + " on " + host +
                           " ended without finishing the run";
        update.bind(1, now).bind(2, run.summary.empty() ? note : run.summary + "; " + note).bind(3, run.id);
        update.run();
    }
    scope.commit();
    return static_cast<int>(stale.size());
}

void Store::delete_run(std::int64_t run_id) {
    detail::WriteScope scope(*impl_, "delete_run");
    detail::Stmt s(impl_->db, "DELETE FROM runs WHERE id = ?1", impl_->path);
    s.bind(1, run_id).run();
    // Blobs are shared between runs (content-addressed): drop only those no run links to any more.
    impl_->exec("DELETE FROM blobs WHERE sha256 NOT IN (SELECT sha256 FROM run_files)");
    scope.commit();
}

} // namespace pkbw
