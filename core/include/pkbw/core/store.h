// The run store: one SQLite file (WAL) that the engine writes and the CLI and GUI read, each reader
// with its own connection so that nothing waits on anything else. docs/store.md describes every table
// and column, the migration policy and the concurrency rules.
#pragma once

#include "pkbw/core/compare.h"
#include "pkbw/core/generation.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw {

enum class RunMode { Dryrun, Eval, Perf };
enum class RunStatus {
    Running,
    Pass,
    Mismatch,
    CompileError,
    Crash,
    Timeout,
    InvalidOutput,
    Error,
    Interrupted,
    Aborted,       // left 'running' by a writer that is gone (mark_stale_runs_aborted)
    InvalidTiming, // perf: a timed call failed its check, or the candidate ran or held the GPU when still
};
enum class SolutionKind { Reference, Candidate };
// Which program a rank ran: PKB's reference or the candidate solution.
// BareNccl: the bare NCCL loop timed beside the reference (perf benchmark), in perf tables only.
enum class Side { Reference, Candidate, BareNccl };
enum class RankOutcome { Ok, Mismatch, CompileError, Crash, Timeout, InvalidOutput, Error, Skipped };

// The text stored in the database ("dryrun", "compile_error", "invalid_output", ...).
std::string_view to_string(RunMode mode);
std::string_view to_string(RunStatus status);
std::string_view to_string(SolutionKind kind);
std::string_view to_string(Side side);
std::string_view to_string(RankOutcome outcome);
std::optional<RunMode> parse_run_mode(std::string_view text);
std::optional<RunStatus> parse_run_status(std::string_view text);
std::optional<SolutionKind> parse_solution_kind(std::string_view text);
std::optional<Side> parse_side(std::string_view text);
std::optional<RankOutcome> parse_rank_outcome(std::string_view text);

// Current UTC time as ISO-8601 with milliseconds, "2026-07-01T12:34:56.789Z". Every time in the
// store uses this fixed format, so text order is time order.
std::string utc_now_iso8601();

struct RunRecord {
    std::int64_t id = 0; // assigned by begin_run
    std::optional<int> problem_id;
    std::string problem_stem;
    RunMode mode = RunMode::Eval;
    std::string backend; // "cuda", "host", "pkb-python", ...
    int world_size = 1;
    std::string dtype;
    std::optional<std::int64_t> m, n;
    nlohmann::json input_shapes = nlohmann::json::object(); // {"input name": [dims...]}
    double atol = kPkbTolerance, rtol = kPkbTolerance;
    int trials = 1; // requested
    std::optional<std::int64_t> seed;
    std::string solution_path;
    std::string solution_sha256; // hex
    SolutionKind solution_kind = SolutionKind::Candidate;
    GenerationLabel generation;
    // Who writes the run: 0 / "" mean "this process" (begin_run fills them). writer_start_ticks is
    // the process start time (Linux /proc starttime) so a recycled pid is not taken for the writer.
    std::int64_t writer_pid = 0;
    std::string writer_host;
    std::optional<std::int64_t> writer_start_ticks;
    std::vector<std::string> gpu_names;
    std::string driver_version;
    std::string cuda_runtime_version, cuda_compiled_version;
    std::string nccl_runtime_version, nccl_compiled_version;
    std::string pkbw_version; // "" means this build's version
    std::vector<std::string> command_line;
    std::string started_at; // "" means now
    std::string ended_at;   // "" while running
    RunStatus status = RunStatus::Running;
    std::optional<int> exit_code;
    std::string summary;
    std::string run_dir; // artifacts directory
};

// Per run x trial x rank x side: how the rank's process ended.
// rank_results.trial of a rank that failed after its last reported trial (between trials, in perf,
// trace, or before teardown): that trial's row keeps its verdict, the failure gets its own row.
inline constexpr int kAfterLastResult = -1;

struct RankResultRow {
    std::int64_t run_id = 0;
    int trial = 0; // kAfterLastResult: not inside a trial
    int rank = 0;
    Side side = Side::Candidate;
    RankOutcome outcome = RankOutcome::Ok;
    std::string phase; // where it ended: "compile", "init", "inputs", "run", "outputs", "compare", ...
    std::string message;
    std::optional<int> exit_code;
    std::optional<int> signal;
    std::string started_at, ended_at; // "" when unknown
    std::optional<double> wall_ms, compile_ms;
};

// Per run x trial x rank x output name: the comparison of one tensor (the fields of
// pkbw::TensorComparison, see from_comparison). NaN doubles are stored as NULL and read back as NaN.
struct TensorResultRow {
    std::int64_t run_id = 0;
    int trial = 0;
    int rank = 0;
    std::string name;
    bool pass = false;
    bool shape_match = false;
    Shape ref_shape, cand_shape;
    std::string ref_dtype, cand_dtype; // pkbw names ("bf16")
    bool dtype_match = false;
    std::int64_t numel = 0;
    std::int64_t mismatch_count = 0;
    double mismatch_fraction = 0;
    double max_abs_error = 0, max_rel_error = 0, worst_ratio = 0;
    std::int64_t first_mismatch = -1, worst_mismatch = -1;
    std::optional<std::uint64_t> max_ulp; // saturates at 2^63 - 1 in the store
    double min_passing_atol = 0;
    ValueSummary ref_summary, cand_summary;
    ErrorMap error_map; // stored as a float32 little-endian BLOB, rows x cols
    std::string message;
    std::optional<TieReport> ties; // schema 6: the protocol's "ties" JSON, NULL when absent
    // Schema 7: a variable-length output's bound and each side's reported length; NULL for fixed shapes.
    std::optional<std::int64_t> length_bound, ref_length, cand_length;
};

// The one mapping from a comparison to a row; run_id, trial and rank are left for the caller.
TensorResultRow from_comparison(const TensorComparison& comparison);

// The block number under which PKB's single timed series (its protocol, as-is) is stored.
inline constexpr int kPkbProtocolBlock = -1;

struct PerfSample {
    std::int64_t run_id = 0;
    Side side = Side::Candidate;
    int rank = 0;
    int block = 0;
    int iteration = 0;
    double ms = 0;
};

// A per-run figure computed from the samples ("median_ms", "p90_ms", "speedup", ...). rank -1 means
// across ranks.
struct PerfSummaryRow {
    std::int64_t run_id = 0;
    Side side = Side::Candidate;
    int rank = -1;
    std::string statistic;
    double value = 0;
};

// What a run said beside its verdict (schema 8): a code flag ("info" or "suspect", with the engine's
// reason) or a warning ("warning"), in the run's order.
struct RunFlagRow {
    std::int64_t run_id = 0;
    int seq = 0;
    std::string severity, text, reason;
};

struct ArtifactRow {
    std::int64_t id = 0; // assigned by add_artifact
    std::int64_t run_id = 0;
    std::optional<int> trial, rank; // absent for run-wide artifacts
    std::string kind;               // "outputs", "log", "trace", ...
    std::string path;
};

// A file a run archived in the store (schema 3, docs/store.md "Archived files"): its bytes live once
// in `blobs` under their SHA-256, and the run links to them with the role the file played.
namespace file_role {
inline constexpr std::string_view kCandidateSource = "candidate_source";
inline constexpr std::string_view kReferenceSource = "reference_source";
inline constexpr std::string_view kCompileLog = "compile_log";  // name compile_<side>.log
inline constexpr std::string_view kDiagnostics = "diagnostics"; // JSON list, name compile_<side>.json
inline constexpr std::string_view kRankLog = "rank_log";        // rank set
inline constexpr std::string_view kConfig = "config";
inline constexpr std::string_view kArtifact = "artifact"; // bundles: name = path relative to the store
} // namespace file_role

struct RunFileRow {
    std::int64_t run_id = 0;
    std::string role;
    std::string name;
    std::optional<int> trial, rank;
    std::string sha256;
    std::int64_t size = 0; // of the blob
};

// A blob read back: `intact` is false when its bytes no longer hash to its key (a damaged store);
// `problem` then says so, naming the store and the hash, and `data` holds what was read.
struct BlobContent {
    bool found = false;
    bool intact = false;
    std::string data;
    std::string problem;
};

// Every set field narrows the list (AND). Text matches problem, generation, summary, solution path
// and backend as a case-insensitive substring.
struct RunFilter {
    std::optional<std::string> problem_stem;
    std::optional<int> problem_id;        // PKB's number (runs.problem_id)
    std::optional<std::int64_t> sweep_id; // runs a sweep linked to its pairs
    std::optional<std::string> generation_label;
    std::optional<std::string> backend;
    std::optional<RunStatus> status;
    std::optional<std::string> started_from; // inclusive, ISO-8601 (a prefix such as "2026-07-01" works)
    std::optional<std::string> started_to;   // exclusive
    std::optional<std::string> text;
};

enum class RunSortColumn { StartedAt, Id, Problem, Generation, Backend, Status, Mode, WorldSize, EndedAt };

struct RunSort {
    RunSortColumn column = RunSortColumn::StartedAt;
    bool descending = true;
};

// A column whose distinct values a GUI filter lists.
enum class RunField { Problem, Generation, Backend, Status };

class Store {
public:
    enum class Missing { Fail, Create };

    // Read-write: creates the file and its parent directories if needed, migrates to the latest
    // schema. Throws pkbw::StoreError (naming the file) on a newer schema or an unusable file, and on
    // a damaged one (PRAGMA quick_check not "ok"), before anything is written to it.
    static Store open(const std::filesystem::path& path);
    // Never writes: SQLITE_OPEN_READONLY, no switch to WAL, no schema created or migrated. A missing
    // or empty (0-byte) file fails, naming it, unless `missing` is Create, in which case the store is
    // created (and an older one migrated) through a short read-write open first (the GUI's "open or
    // create"). In a folder this process cannot write (read-only media, another user's folder) the
    // file is opened immutable (SQLite's immutable=1: no lock, no -wal or -shm created), unless WAL
    // content lies beside it.
    static Store open_read_only(const std::filesystem::path& path, Missing missing = Missing::Fail);

    Store(Store&&) noexcept;
    Store& operator=(Store&&) noexcept;
    ~Store();

    const std::filesystem::path& path() const;
    bool read_only() const;
    bool immutable() const;     // read-only and opened immutable (see open_read_only)
    int schema_version() const; // PRAGMA user_version
    static int latest_schema_version();

    // A write transaction (BEGIN IMMEDIATE); rolled back unless commit() is called. Writer methods
    // called while one is open join it instead of starting their own.
    class Transaction {
    public:
        explicit Transaction(Store& store);
        Transaction(const Transaction&) = delete;
        Transaction& operator=(const Transaction&) = delete;
        ~Transaction();
        void commit();

    private:
        Store* store_;
        bool done_ = false;
    };
    // Runs `body` in one transaction; commits if it returns, rolls back if it throws.
    void write_batch(const std::function<void()>& body);

    // Writer. Each call is atomic on its own; batch with Transaction / write_batch for speed.
    std::int64_t begin_run(const RunRecord& run);
    void finish_run(std::int64_t run_id, RunStatus status, std::optional<int> exit_code,
                    std::string_view summary, std::string_view ended_at = {}); // "" = now
    // What the ranks reported once they started (their `hello`): GPU names, driver, CUDA runtime and
    // the NCCL versions loaded and compiled against. Replaces the run row's values.
    void set_run_environment(std::int64_t run_id, const std::vector<std::string>& gpu_names,
                             std::string_view driver_version, std::string_view cuda_runtime_version,
                             std::string_view nccl_runtime_version, std::string_view nccl_compiled_version);
    void add_rank_result(const RankResultRow& row);
    void add_tensor_result(const TensorResultRow& row);
    // One row per sample; iteration = first_iteration + index. `block` is the timed block's position
    // in pkbw's ABBA order (0, 1, ...); PKB's protocol series is stored as block kPkbProtocolBlock.
    void add_perf_samples(std::int64_t run_id, Side side, int rank, int block, std::span<const double> ms,
                          int first_iteration = 0);
    void add_perf_summary(const PerfSummaryRow& row); // replaces the same (run, side, rank, statistic)
    // Replaces the run's flags with `flags` (seq renumbered 0, 1, ... in their order). Throws
    // StoreError naming the flag when a severity is not info, suspect or warning.
    void set_run_flags(std::int64_t run_id, const std::vector<RunFlagRow>& flags);
    std::int64_t add_artifact(const ArtifactRow& row);
    // Archived files. archive_blob stores `data` under its SHA-256 (once: an existing blob is kept)
    // and returns the hash; add_run_file links a run to a blob (the same run, role and name again
    // replaces the link); archive_run_file does both.
    std::string archive_blob(std::string_view data);
    void add_run_file(const RunFileRow& row);
    std::string archive_run_file(std::int64_t run_id, std::string_view role, std::string_view name,
                                 std::string_view data, std::optional<int> trial = std::nullopt,
                                 std::optional<int> rank = std::nullopt);
    // Runs left 'running' whose writer is gone (same host, pid dead or recycled) become 'aborted'.
    // Runs written from another host are left alone: their writer cannot be checked from here.
    // Returns how many were marked.
    int mark_stale_runs_aborted();
    // Deletes a run and everything under it.
    void delete_run(std::int64_t run_id);

    // Readers.
    std::vector<RunRecord> list_runs(const RunFilter& filter = {}, RunSort sort = {}, int limit = 100,
                                     int offset = 0) const;
    std::int64_t count_runs(const RunFilter& filter = {}) const;
    std::optional<RunRecord> get_run(std::int64_t run_id) const;
    std::vector<std::string> distinct_values(RunField field) const;
    // Ordered by trial, rank, name. Error maps are read only when asked (they are the bulk of a run).
    std::vector<TensorResultRow> tensor_results(std::int64_t run_id, bool with_error_maps = true) const;
    std::vector<RankResultRow> rank_results(std::int64_t run_id) const; // by trial, rank, side
    std::vector<PerfSample> perf_samples(std::int64_t run_id) const;    // by side, rank, block, iteration
    std::vector<PerfSummaryRow> perf_summaries(std::int64_t run_id) const;
    std::vector<RunFlagRow> run_flags(std::int64_t run_id) const; // by seq; none before schema 8
    std::vector<ArtifactRow> artifacts(std::int64_t run_id) const;
    // The run's archived files, by role, trial, rank, name (without their bytes).
    std::vector<RunFileRow> run_files(std::int64_t run_id) const;
    // A blob's bytes, checked against its hash.
    BlobContent read_blob(std::string_view sha256) const;

    // Where a path the store recorded (a run_dir or an artifact path) is now. Paths under the
    // store's folder are recorded relative to it, so a store copied with its runs/ folder still finds
    // them; an older absolute path that no longer exists is looked for at the same place under the
    // store's folder (runs/<run dir name>/...). get_run, list_runs and artifacts() return resolved
    // paths; `recorded_run_dir` is the run's run_dir as recorded (empty when resolving a run_dir).
    std::filesystem::path resolve_recorded_path(std::string_view recorded,
                                                std::string_view recorded_run_dir = {}) const;
    // The store's folder (absolute): what recorded relative paths are relative to.
    std::filesystem::path folder() const;

    // PRAGMA integrity_check: "ok" or SQLite's list of problems.
    std::string integrity_check() const;
    // Throws the StoreError of a store opened read-only, or of a damaged file (PRAGMA quick_check not
    // "ok", naming the file). Every write calls it first; the check runs once per Store, before its
    // first write (writers on side connections, sweeps, traces, generations, call it too).
    void check_before_write() const;

    struct Impl;

private:
    explicit Store(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

} // namespace pkbw
