// Fixture stores and run folders for the GUI tests, written through core's API (no checked-in
// binary stores).
#pragma once

#include "pkbw/core/store.h"
#include "pkbw/core/tensor.h"
#include "pkbw/core/trace.h"

#include <QString>
#include <filesystem>
#include <optional>
#include <utility>

namespace pkbw::test {

// A 4x4 f32 tensor with values 0..15 (row-major).
Tensor iota_4x4();
// iota_4x4 with three elements changed: [0,1] += 0.5, [2,3] = NaN, [3,0] += 0.04.
// At atol 0.01, rtol 0: [0,1] ratio 50, [2,3] inf, [3,0] ratio 4 -> 3 mismatches, first at 1, worst at 11.
Tensor perturbed_4x4();

struct FixtureRun {
    std::int64_t run_id = 0;
    std::filesystem::path run_dir;
};

// An eval run, 2 ranks x 3 trials: trial 0 passes on both ranks; trial 1 rank 1 mismatches (the
// perturbed tensor, outputs written); trial 2 not run. Plus perf samples (reference 2 ms, candidate
// 1 ms per iteration) on a perf run when `with_perf`.
FixtureRun add_eval_run(Store& store, const std::filesystem::path& dir,
                        const std::string& problem = "2_allgather",
                        const std::string& generation = "solutions_cuda_bf16_none_anthropic_claude");
// The record of a 2-rank host-backend perf run of `problem`, for begin_run.
RunRecord perf_run_record(const std::string& problem);
std::int64_t add_perf_run(Store& store, const std::string& problem, const std::string& generation,
                          double reference_ms, double candidate_ms);
// A finished 2-rank run of `problem` in `generation`, started at 2026-12-01T10:00:<second>Z, with
// `speedup` stored as `statistic` (rank -1) when given; a backend "pkb-…" makes it an import-pkb run.
std::int64_t add_run(Store& store, const std::string& problem, const std::string& generation, RunMode mode,
                     RunStatus status, std::optional<double> speedup, int second,
                     const std::string& backend = "host", const std::string& statistic = "speedup");
// A store `<name>.db` holding the fixture eval run (its run folder `<name>-run`): path and run id.
std::pair<QString, std::int64_t> one_eval_run_store(const QString& name);
// `count` minimal runs (problems p0..p4 round robin, every 3rd a mismatch), in one transaction.
void add_many_runs(Store& store, int count);

QString temp_path(const QString& name); // under a per-process temporary folder

// One trace event [t0, t1] ns; an engine "iteration" range ("reference/0") carries its side in its
// payload, as the rank program writes it.
TraceEvent trace_event(TraceEventKind kind, const std::string& category, const std::string& name,
                       std::int64_t t0, std::int64_t t1, int stream = -1);

} // namespace pkbw::test
