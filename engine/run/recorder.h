// What a run writes to the store, as a narrow interface: the run orchestration depends on this, the
// store adapter (store_recorder.cpp) maps it onto pkbw::Store, and tests use MemoryRecorder.
#pragma once

#include "pkbw/core/compare.h"
#include "pkbw/core/trace.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::cli {

struct RunStart {
    std::optional<int> problem_id;
    std::string problem_stem;
    std::string mode;    // dryrun | eval | perf
    std::string backend; // cuda | host
    int world_size = 1;
    std::string dtype;
    std::int64_t m = 0, n = 0;
    double atol = kPkbTolerance, rtol = kPkbTolerance;
    int trials = 1;
    std::uint64_t seed = 42;
    std::string solution_path;
    std::string solution_sha256;
    bool solution_is_reference = false;
    std::string generation_folder; // the solutions folder name (generation label source)
    std::vector<std::string> command_line;
    std::string run_dir;
    std::string host;
};

// What the ranks' `hello` events say about the machine; known only after launch.
struct RunEnvironment {
    std::vector<std::string> gpu_names;
    std::string driver_version;
    std::string cuda_runtime_version, cuda_compiled_version;
    std::string nccl_runtime_version, nccl_compiled_version;
};

struct RankRecord {
    int trial = 0;
    int rank = 0;
    std::string outcome; // ok, mismatch, compile_error, crash, timeout, invalid_output, error, skipped
    std::string phase;
    std::string message;
    std::optional<int> exit_code, signal;
};

struct TensorRecord {
    int trial = 0;
    int rank = 0;
    TensorComparison comparison;
};

struct ArtifactRecord {
    std::optional<int> trial, rank;
    std::string kind; // log, compile_log, outputs, config
    std::string path;
};

// A file archived with the run (schema 3): a file on disk, or `text` when `path` is empty.
// role: core's file_role names (candidate_source, reference_source, compile_log, diagnostics, ...).
struct ArchiveRecord {
    std::string role;
    std::string path;
    std::string name; // with text
    std::string text;
    std::optional<int> trial, rank;
};

// What a run said beside its verdict (the store's run_flags): a code flag ("info" or "suspect", with
// the engine's reason) or a warning ("warning").
struct FlagRecord {
    std::string severity, text, reason;
};

class Recorder {
public:
    virtual ~Recorder() = default;
    virtual int mark_stale_runs_aborted() = 0;
    virtual std::int64_t begin_run(const RunStart& run) = 0;
    virtual void set_environment(std::int64_t run_id, const RunEnvironment& environment) = 0;
    virtual void add_rank_result(std::int64_t run_id, const RankRecord& record) = 0;
    virtual void add_tensor_result(std::int64_t run_id, const TensorRecord& record) = 0;
    virtual void add_artifact(std::int64_t run_id, const ArtifactRecord& record) = 0;
    // side: reference, candidate or bare_nccl; block -1 is PKB's protocol series.
    virtual void add_perf_samples(std::int64_t run_id, const std::string& side, int rank, int block,
                                  const std::vector<double>& samples) = 0;
    virtual void add_perf_summary(std::int64_t run_id, const std::string& side, int rank,
                                  const std::string& statistic, double value) = 0;
    virtual void add_traces(std::int64_t run_id, const std::vector<RankTrace>& traces) = 0;
    // Archives a file or a text with the run (the code that ran, diagnostics, logs).
    virtual void archive(std::int64_t run_id, const ArchiveRecord& record) = 0;
    // The run's flags and warnings with their severity, in order (replacing any recorded before).
    virtual void set_flags(std::int64_t run_id, const std::vector<FlagRecord>& flags) = 0;
    // status: the store's text (pass, mismatch, compile_error, crash, timeout, invalid_output, error,
    // interrupted).
    virtual void finish_run(std::int64_t run_id, const std::string& status, int exit_code,
                            const std::string& summary) = 0;
};

// Keeps everything in memory (tests, and --store none).
class MemoryRecorder : public Recorder {
public:
    struct Run {
        RunStart start;
        RunEnvironment environment;
        std::vector<RankRecord> ranks;
        std::vector<TensorRecord> tensors;
        std::vector<ArtifactRecord> artifacts;
        std::vector<ArchiveRecord> archived;
        std::map<std::string, double> perf_summaries; // "side/rank/statistic" -> value
        std::vector<FlagRecord> flags;
        std::size_t perf_samples = 0;
        std::size_t trace_events = 0;
        std::string status = "running";
        std::optional<int> exit_code;
        std::string summary;
    };
    int mark_stale_runs_aborted() override { return 0; }
    std::int64_t begin_run(const RunStart& run) override;
    void set_environment(std::int64_t run_id, const RunEnvironment& environment) override;
    void add_rank_result(std::int64_t run_id, const RankRecord& record) override;
    void add_tensor_result(std::int64_t run_id, const TensorRecord& record) override;
    void add_artifact(std::int64_t run_id, const ArtifactRecord& record) override;
    void add_perf_samples(std::int64_t run_id, const std::string& side, int rank, int block,
                          const std::vector<double>& samples) override;
    void add_perf_summary(std::int64_t run_id, const std::string& side, int rank,
                          const std::string& statistic, double value) override;
    void add_traces(std::int64_t run_id, const std::vector<RankTrace>& traces) override;
    void archive(std::int64_t run_id, const ArchiveRecord& record) override;
    void set_flags(std::int64_t run_id, const std::vector<FlagRecord>& flags) override {
        runs.at(run_id).flags = flags;
    }
    void finish_run(std::int64_t run_id, const std::string& status, int exit_code,
                    const std::string& summary) override;
    std::map<std::int64_t, Run> runs;
};

} // namespace pkbw::cli
