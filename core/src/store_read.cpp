// The store's reader side: run lists (filtered, sorted, paged through indexes) and the rows under a
// run. Every method works on a read-only connection.
#include "pkbw/core/error.h"
#include "pkbw/core/protocol.h"
#include "store_db.h"

#include <bit>

namespace pkbw {

namespace {

constexpr const char* kRunColumns =
    "id, problem_id, problem_stem, mode, backend, world_size, dtype, m, n, input_shapes, atol, rtol, trials, "
    "seed, solution_path, solution_sha256, solution_kind, generation_label, generation_backend, "
    "generation_precision, generation_hardware, generation_provider, generation_model, generation_parsed, "
    "writer_host, writer_pid, writer_start_ticks, gpu_names, driver_version, cuda_runtime_version, "
    "cuda_compiled_version, nccl_runtime_version, nccl_compiled_version, pkbw_version, command_line, "
    "started_at, ended_at, status, exit_code, summary, run_dir";

// The largest error map side anything writes or reads (the protocol's limit too).
constexpr int kMaxErrorMapSide = 65536;

[[noreturn]] void bad_value(const Store::Impl& impl, std::int64_t run_id, const char* column,
                            const std::string& value) {
    throw StoreError("store " + impl.path.string() + ": run " + std::to_string(run_id) + ": unreadable " +
                     column + " '" + value + "'");
}

template <class T, class Parse>
T parse_or_throw(const Store::Impl& impl, std::int64_t run_id, const char* column, const std::string& text,
                 Parse parse) {
    auto value = parse(text);
    if (!value)
        bad_value(impl, run_id, column, text);
    return *value;
}

nlohmann::json parse_json(const Store::Impl& impl, std::int64_t run_id, const char* column,
                          const std::string& text) {
    auto value = nlohmann::json::parse(text, nullptr, false);
    if (value.is_discarded())
        bad_value(impl, run_id, column, text);
    return value;
}

template <class T>
T json_as(const Store::Impl& impl, std::int64_t run_id, const char* column, const std::string& text) {
    try {
        return parse_json(impl, run_id, column, text).get<T>();
    } catch (const nlohmann::json::exception&) {
        bad_value(impl, run_id, column, text);
    }
}

std::optional<int> opt_int(const detail::Stmt& s, int column) {
    auto value = s.opt_i64(column);
    return value ? std::optional<int>(static_cast<int>(*value)) : std::nullopt;
}

RunRecord read_run(const Store::Impl& impl, const detail::Stmt& s) {
    RunRecord r;
    int c = 0;
    r.id = s.i64(c++);
    r.problem_id = opt_int(s, c++);
    r.problem_stem = s.text(c++);
    r.mode = parse_or_throw<RunMode>(impl, r.id, "mode", s.text(c++), parse_run_mode);
    r.backend = s.text(c++);
    r.world_size = s.i32(c++);
    r.dtype = s.text(c++);
    r.m = s.opt_i64(c++);
    r.n = s.opt_i64(c++);
    r.input_shapes = parse_json(impl, r.id, "input_shapes", s.text(c++));
    r.atol = s.real(c++);
    r.rtol = s.real(c++);
    r.trials = s.i32(c++);
    r.seed = s.opt_i64(c++);
    r.solution_path = s.text(c++);
    r.solution_sha256 = s.text(c++);
    r.solution_kind =
        parse_or_throw<SolutionKind>(impl, r.id, "solution_kind", s.text(c++), parse_solution_kind);
    auto& g = r.generation;
    g.label = s.text(c++);
    g.backend = s.text(c++);
    g.precision = s.text(c++);
    g.hardware = s.text(c++);
    g.provider = s.text(c++);
    g.model = s.text(c++);
    g.parsed = s.i64(c++) != 0;
    r.writer_host = s.text(c++);
    r.writer_pid = s.i64(c++);
    r.writer_start_ticks = s.opt_i64(c++);
    r.gpu_names = json_as<std::vector<std::string>>(impl, r.id, "gpu_names", s.text(c++));
    r.driver_version = s.text(c++);
    r.cuda_runtime_version = s.text(c++);
    r.cuda_compiled_version = s.text(c++);
    r.nccl_runtime_version = s.text(c++);
    r.nccl_compiled_version = s.text(c++);
    r.pkbw_version = s.text(c++);
    r.command_line = json_as<std::vector<std::string>>(impl, r.id, "command_line", s.text(c++));
    r.started_at = s.text(c++);
    r.ended_at = s.text(c++);
    r.status = parse_or_throw<RunStatus>(impl, r.id, "status", s.text(c++), parse_run_status);
    r.exit_code = opt_int(s, c++);
    r.summary = s.text(c++);
    r.run_dir = detail::resolve_recorded(impl, s.text(c++), {});
    return r;
}

// LIKE pattern matching `text` anywhere, with LIKE's wildcards escaped.
std::string like_pattern(const std::string& text) {
    std::string pattern = "%";
    for (char ch : text) {
        if (ch == '%' || ch == '_' || ch == '\\')
            pattern += '\\';
        pattern += ch;
    }
    return pattern + "%";
}

struct Where {
    std::string sql;
    std::vector<std::string> values;
};

Where build_where(const RunFilter& f) {
    Where where;
    auto add = [&](const char* condition, std::string value) {
        where.sql += where.sql.empty() ? " WHERE " : " AND ";
        where.sql += condition;
        where.values.push_back(std::move(value));
    };
    if (f.problem_stem)
        add("problem_stem = ?", *f.problem_stem);
    if (f.problem_id)
        add("problem_id = CAST(? AS INTEGER)", std::to_string(*f.problem_id));
    if (f.sweep_id)
        add("id IN (SELECT run_id FROM sweep_pairs WHERE sweep_id = CAST(? AS INTEGER))",
            std::to_string(*f.sweep_id));
    if (f.generation_label)
        add("generation_label = ?", *f.generation_label);
    if (f.backend)
        add("backend = ?", *f.backend);
    if (f.status)
        add("status = ?", std::string(to_string(*f.status)));
    if (f.started_from)
        add("started_at >= ?", *f.started_from);
    if (f.started_to)
        add("started_at < ?", *f.started_to);
    if (f.text) {
        // One bound value used five times (?NNN numbering), so `values` stays positional.
        std::string n = std::to_string(where.values.size() + 1);
        std::string condition = "(";
        for (const char* column : {"problem_stem", "generation_label", "summary", "solution_path", "backend"})
            condition +=
                std::string(condition.size() > 1 ? " OR " : "") + column + " LIKE ?" + n + " ESCAPE '\\'";
        add((condition + ")").c_str(), like_pattern(*f.text));
    }
    return where;
}

const char* sort_column(RunSortColumn column) {
    switch (column) {
    case RunSortColumn::StartedAt:
        return "started_at";
    case RunSortColumn::Id:
        return "id";
    case RunSortColumn::Problem:
        return "problem_stem";
    case RunSortColumn::Generation:
        return "generation_label";
    case RunSortColumn::Backend:
        return "backend";
    case RunSortColumn::Status:
        return "status";
    case RunSortColumn::Mode:
        return "mode";
    case RunSortColumn::WorldSize:
        return "world_size";
    case RunSortColumn::EndedAt:
        return "ended_at";
    }
    return "started_at";
}

Shape read_shape(const Store::Impl& impl, std::int64_t run_id, const char* column, const std::string& text) {
    return json_as<Shape>(impl, run_id, column, text);
}

} // namespace

std::vector<RunRecord> Store::list_runs(const RunFilter& filter, RunSort sort, int limit, int offset) const {
    Where where = build_where(filter);
    const char* direction = sort.descending ? " DESC" : " ASC";
    std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs" + where.sql + " ORDER BY " +
                      sort_column(sort.column) + direction + ", id" + direction + " LIMIT ? OFFSET ?";
    detail::Stmt s(impl_->db, sql, impl_->path);
    int index = 1;
    for (const auto& value : where.values)
        s.bind(index++, value);
    s.bind(index, std::max(limit, 0)).bind(index + 1, std::max(offset, 0));
    std::vector<RunRecord> runs;
    while (s.step())
        runs.push_back(read_run(*impl_, s));
    return runs;
}

std::int64_t Store::count_runs(const RunFilter& filter) const {
    Where where = build_where(filter);
    detail::Stmt s(impl_->db, "SELECT count(*) FROM runs" + where.sql, impl_->path);
    for (std::size_t i = 0; i < where.values.size(); ++i)
        s.bind(static_cast<int>(i + 1), where.values[i]);
    s.step();
    return s.i64(0);
}

std::optional<RunRecord> Store::get_run(std::int64_t run_id) const {
    detail::Stmt s(impl_->db, std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1", impl_->path);
    s.bind(1, run_id);
    if (!s.step())
        return std::nullopt;
    return read_run(*impl_, s);
}

std::vector<std::string> Store::distinct_values(RunField field) const {
    const char* column = field == RunField::Problem      ? "problem_stem"
                         : field == RunField::Generation ? "generation_label"
                         : field == RunField::Backend    ? "backend"
                                                         : "status";
    detail::Stmt s(impl_->db, std::string("SELECT DISTINCT ") + column + " FROM runs ORDER BY 1",
                   impl_->path);
    std::vector<std::string> values;
    while (s.step())
        values.push_back(s.text(0));
    return values;
}

std::vector<TensorResultRow> Store::tensor_results(std::int64_t run_id, bool with_error_maps) const {
    std::string sql = R"sql(SELECT trial, rank, name, pass, shape_match, ref_shape, cand_shape, ref_dtype,
        cand_dtype, dtype_match, numel, mismatch_count, mismatch_fraction, max_abs_error, max_rel_error,
        worst_ratio, first_mismatch, worst_mismatch, max_ulp, min_passing_atol, ref_nan_count, ref_inf_count,
        ref_zero_count, ref_min, ref_max, ref_mean, ref_all_zero, ref_constant, cand_nan_count, cand_inf_count,
        cand_zero_count, cand_min, cand_max, cand_mean, cand_all_zero, cand_constant, message,
        error_map_src_rows, error_map_src_cols, error_map_rows, error_map_cols, ties, length_bound,
        ref_length, cand_length, )sql";
    sql += with_error_maps ? "error_map" : "NULL";
    sql += " FROM tensor_results WHERE run_id = ?1 ORDER BY trial, rank, name";
    detail::Stmt s(impl_->db, sql, impl_->path);
    s.bind(1, run_id);
    std::vector<TensorResultRow> rows;
    while (s.step()) {
        TensorResultRow r;
        r.run_id = run_id;
        int c = 0;
        r.trial = s.i32(c++);
        r.rank = s.i32(c++);
        r.name = s.text(c++);
        r.pass = s.i64(c++) != 0;
        r.shape_match = s.i64(c++) != 0;
        r.ref_shape = read_shape(*impl_, run_id, "ref_shape", s.text(c++));
        r.cand_shape = read_shape(*impl_, run_id, "cand_shape", s.text(c++));
        r.ref_dtype = s.text(c++);
        r.cand_dtype = s.text(c++);
        r.dtype_match = s.i64(c++) != 0;
        r.numel = s.i64(c++);
        r.mismatch_count = s.i64(c++);
        r.mismatch_fraction = s.real(c++);
        r.max_abs_error = s.real(c++);
        r.max_rel_error = s.real(c++);
        r.worst_ratio = s.real(c++);
        r.first_mismatch = s.i64(c++);
        r.worst_mismatch = s.i64(c++);
        auto ulp = s.opt_i64(c++);
        if (ulp)
            r.max_ulp = static_cast<std::uint64_t>(*ulp);
        r.min_passing_atol = s.real(c++);
        for (ValueSummary* v : {&r.ref_summary, &r.cand_summary}) {
            v->nan_count = s.i64(c++);
            v->inf_count = s.i64(c++);
            v->zero_count = s.i64(c++);
            v->min = s.real(c++);
            v->max = s.real(c++);
            v->mean = s.real(c++);
            v->all_zero = s.i64(c++) != 0;
            v->constant = s.i64(c++) != 0;
        }
        r.message = s.text(c++);
        auto& map = r.error_map;
        map.source_rows = s.i64(c++);
        map.source_cols = s.i64(c++);
        map.rows = s.i32(c++);
        map.cols = s.i32(c++);
        if (!s.is_null(c)) {
            const std::string source = "store " + impl_->path.string() + ": run " + std::to_string(run_id) +
                                       " tensor '" + r.name + "' ties";
            try {
                r.ties = protocol::tie_report_from_json(nlohmann::json::parse(s.text(c)), source);
            } catch (const nlohmann::json::exception& e) {
                throw StoreError(source + ": not JSON: " + e.what());
            } catch (const FormatError& e) {
                throw StoreError(e.what());
            }
        }
        ++c;
        r.length_bound = s.opt_i64(c++);
        r.ref_length = s.opt_i64(c++);
        r.cand_length = s.opt_i64(c++);
        // A negative size made rows x cols wrap around in size_t: INT_MIN x INT_MIN "matched" a
        // NULL map and then asked for 2^62 cells.
        if (map.rows < 0 || map.cols < 0 || map.rows > kMaxErrorMapSide || map.cols > kMaxErrorMapSide)
            throw StoreError("store " + impl_->path.string() + ": run " + std::to_string(run_id) +
                             " tensor '" + r.name + "': error map of " + std::to_string(map.rows) + " x " +
                             std::to_string(map.cols) + " cells is out of range");
        if (with_error_maps) {
            std::size_t cells = static_cast<std::size_t>(map.rows) * static_cast<std::size_t>(map.cols);
            std::size_t bytes = s.is_null(c) ? 0 : s.bytes(c);
            if (bytes != cells * 4)
                throw StoreError("store " + impl_->path.string() + ": run " + std::to_string(run_id) +
                                 " tensor '" + r.name + "': error map has " + std::to_string(bytes) +
                                 " bytes, expected " + std::to_string(cells * 4));
            const auto* data = static_cast<const unsigned char*>(s.blob(c));
            map.ratio.resize(cells);
            for (std::size_t i = 0; i < cells; ++i) {
                std::uint32_t bits = 0;
                for (int b = 0; b < 4; ++b)
                    bits |= static_cast<std::uint32_t>(data[i * 4 + b]) << (8 * b);
                map.ratio[i] = std::bit_cast<float>(bits);
            }
        }
        rows.push_back(std::move(r));
    }
    return rows;
}

std::vector<RankResultRow> Store::rank_results(std::int64_t run_id) const {
    detail::Stmt s(impl_->db, R"sql(SELECT trial, rank, side, outcome, phase, message, exit_code, signal,
        started_at, ended_at, wall_ms, compile_ms FROM rank_results WHERE run_id = ?1
        ORDER BY trial, rank, side)sql",
                   impl_->path);
    s.bind(1, run_id);
    std::vector<RankResultRow> rows;
    while (s.step()) {
        RankResultRow r;
        r.run_id = run_id;
        r.trial = s.i32(0);
        r.rank = s.i32(1);
        r.side = parse_or_throw<Side>(*impl_, run_id, "rank_results.side", s.text(2), parse_side);
        r.outcome = parse_or_throw<RankOutcome>(*impl_, run_id, "rank_results.outcome", s.text(3),
                                                parse_rank_outcome);
        r.phase = s.text(4);
        r.message = s.text(5);
        r.exit_code = opt_int(s, 6);
        r.signal = opt_int(s, 7);
        r.started_at = s.text(8);
        r.ended_at = s.text(9);
        r.wall_ms = s.opt_real(10);
        r.compile_ms = s.opt_real(11);
        rows.push_back(std::move(r));
    }
    return rows;
}

std::vector<PerfSample> Store::perf_samples(std::int64_t run_id) const {
    detail::Stmt s(impl_->db,
                   "SELECT side, rank, block, iteration, ms FROM perf_samples WHERE run_id = ?1 "
                   "ORDER BY side, rank, block, iteration",
                   impl_->path);
    s.bind(1, run_id);
    std::vector<PerfSample> samples;
    while (s.step()) {
        auto side = s.i64(0);
        if (side < 0 || side > 2)
            bad_value(*impl_, run_id, "perf_samples.side", std::to_string(side));
        samples.push_back({run_id, static_cast<Side>(side), s.i32(1), s.i32(2), s.i32(3), s.real(4)});
    }
    return samples;
}

std::vector<PerfSummaryRow> Store::perf_summaries(std::int64_t run_id) const {
    detail::Stmt s(impl_->db,
                   "SELECT side, rank, statistic, value FROM perf_summaries WHERE run_id = ?1 "
                   "ORDER BY side, rank, statistic",
                   impl_->path);
    s.bind(1, run_id);
    std::vector<PerfSummaryRow> rows;
    while (s.step())
        rows.push_back({run_id,
                        parse_or_throw<Side>(*impl_, run_id, "perf_summaries.side", s.text(0), parse_side),
                        s.i32(1), s.text(2), s.real(3)});
    return rows;
}

std::vector<RunFlagRow> Store::run_flags(std::int64_t run_id) const {
    detail::Stmt s(impl_->db,
                   "SELECT seq, severity, text, reason FROM run_flags WHERE run_id = ?1 ORDER BY seq",
                   impl_->path);
    s.bind(1, run_id);
    std::vector<RunFlagRow> rows;
    while (s.step())
        rows.push_back({run_id, s.i32(0), s.text(1), s.text(2), s.text(3)});
    return rows;
}

std::vector<ArtifactRow> Store::artifacts(std::int64_t run_id) const {
    detail::Stmt s(impl_->db,
                   "SELECT id, trial, rank, kind, path FROM artifacts WHERE run_id = ?1 ORDER BY id",
                   impl_->path);
    s.bind(1, run_id);
    std::string recorded_run_dir;
    {
        detail::Stmt dir(impl_->db, "SELECT run_dir FROM runs WHERE id = ?1", impl_->path);
        dir.bind(1, run_id);
        if (dir.step())
            recorded_run_dir = dir.text(0);
    }
    std::vector<ArtifactRow> rows;
    while (s.step())
        rows.push_back({s.i64(0), run_id, opt_int(s, 1), opt_int(s, 2), s.text(3),
                        detail::resolve_recorded(*impl_, s.text(4), recorded_run_dir)});
    return rows;
}

} // namespace pkbw
