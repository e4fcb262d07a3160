#include "fixtures.h"

#include "pkbw/core/compare.h"
#include "pkbw/core/safetensors.h"

#include <QDir>
#include <QTemporaryDir>
#include <cmath>
#include <cstring>
#include <limits>

namespace pkbw::test {
namespace fs = std::filesystem;

Tensor iota_4x4() {
    Tensor t = Tensor::zeros(DType::F32, {4, 4});
    float* p = t.mutable_data_as<float>();
    for (int i = 0; i < 16; ++i) {
        p[i] = static_cast<float>(i);
    }
    return t;
}

Tensor perturbed_4x4() {
    Tensor t = iota_4x4();
    float* p = t.mutable_data_as<float>();
    p[1] += 0.5f;
    p[11] = std::numeric_limits<float>::quiet_NaN();
    p[12] += 0.04f;
    return t;
}

QString temp_path(const QString& name) {
    static QTemporaryDir dir;
    return dir.filePath(name);
}

FixtureRun add_eval_run(Store& store, const fs::path& dir, const std::string& problem,
                        const std::string& generation) {
    FixtureRun f;
    RunRecord run;
    run.problem_stem = problem;
    run.mode = RunMode::Eval;
    run.backend = "host";
    run.world_size = 2;
    run.dtype = "f32";
    run.atol = 0.01;
    run.rtol = 0;
    run.trials = 3;
    run.solution_path = (dir / "solution.cu").string();
    run.generation = parse_generation_label(generation);
    f.run_dir = dir / ("run_" + problem + "_" + std::to_string(store.count_runs()));
    run.run_dir = f.run_dir.string();
    f.run_id = store.begin_run(run);
    CompareOptions options;
    options.atol = 0.01;
    options.rtol = 0;
    for (int trial = 0; trial < 2; ++trial) {
        for (int rank = 0; rank < 2; ++rank) {
            const bool bad = trial == 1 && rank == 1;
            OutputSet ref, cand;
            ref.add("output", iota_4x4());
            cand.add("output", bad ? perturbed_4x4() : iota_4x4());
            const fs::path out = f.run_dir / "outputs" / ("trial_" + std::to_string(trial));
            fs::create_directories(out);
            write_safetensors((out / ("rank_" + std::to_string(rank) + "_reference.safetensors")).string(),
                              ref);
            write_safetensors((out / ("rank_" + std::to_string(rank) + "_candidate.safetensors")).string(),
                              cand);
            for (Side side : {Side::Reference, Side::Candidate}) {
                RankResultRow rr;
                rr.run_id = f.run_id;
                rr.trial = trial;
                rr.rank = rank;
                rr.side = side;
                rr.outcome = (bad && side == Side::Candidate) ? RankOutcome::Mismatch : RankOutcome::Ok;
                rr.phase = "compare";
                store.add_rank_result(rr);
            }
            TensorResultRow row =
                from_comparison(compare_tensors(ref.tensors[0].tensor, cand.tensors[0].tensor, options));
            row.run_id = f.run_id;
            row.trial = trial;
            row.rank = rank;
            store.add_tensor_result(row);
        }
    }
    store.finish_run(f.run_id, RunStatus::Mismatch, 1, "mismatch on rank 1, trial 1");
    return f;
}

RunRecord perf_run_record(const std::string& problem) {
    RunRecord run;
    run.problem_stem = problem;
    run.mode = RunMode::Perf;
    run.backend = "host";
    run.world_size = 2;
    return run;
}

std::int64_t add_perf_run(Store& store, const std::string& problem, const std::string& generation,
                          double reference_ms, double candidate_ms) {
    RunRecord run = perf_run_record(problem);
    run.generation = parse_generation_label(generation);
    const auto id = store.begin_run(run);
    for (int rank = 0; rank < 2; ++rank) {
        for (int block = 0; block < 4; ++block) {
            const std::vector<double> ref(20, reference_ms), cand(20, candidate_ms);
            store.add_perf_samples(id, Side::Reference, rank, block, ref);
            store.add_perf_samples(id, Side::Candidate, rank, block, cand);
        }
    }
    PerfSummaryRow s;
    s.run_id = id;
    s.side = Side::Candidate;
    s.rank = -1;
    s.statistic = "speedup";
    s.value = reference_ms / candidate_ms;
    store.add_perf_summary(s);
    store.finish_run(id, RunStatus::Pass, 0, "");
    return id;
}

std::int64_t add_run(Store& store, const std::string& problem, const std::string& generation, RunMode mode,
                     RunStatus status, std::optional<double> speedup, int second, const std::string& backend,
                     const std::string& statistic) {
    RunRecord run;
    run.problem_stem = problem;
    run.mode = mode;
    run.backend = backend;
    run.world_size = 2;
    run.generation = parse_generation_label(generation);
    run.started_at =
        QStringLiteral("2026-12-01T10:00:%1Z").arg(second, 2, 10, QLatin1Char('0')).toStdString();
    if (backend.rfind("pkb-", 0) == 0) {
        run.command_line = {"pkbw", "import-pkb", "/logs"};
    }
    const auto id = store.begin_run(run);
    if (speedup) {
        store.add_perf_summary({id, Side::Candidate, -1, statistic, *speedup});
    }
    store.finish_run(id, status, 0, "");
    return id;
}

// A store `<name>.db` holding the fixture eval run (its run folder `<name>-run`): path and run id.
std::pair<QString, std::int64_t> one_eval_run_store(const QString& name) {
    const QString path = test::temp_path(name + QStringLiteral(".db"));
    Store store = Store::open(path.toStdString());
    return {path,
            test::add_eval_run(store, test::temp_path(name + QStringLiteral("-run")).toStdString()).run_id};
}

void add_many_runs(Store& store, int count) {
    store.write_batch([&] {
        for (int i = 0; i < count; ++i) {
            RunRecord run;
            run.problem_stem = "p" + std::to_string(i % 5);
            run.mode = RunMode::Eval;
            run.backend = i % 2 ? "host" : "cuda";
            run.world_size = 2;
            const auto id = store.begin_run(run);
            store.finish_run(id, i % 3 == 0 ? RunStatus::Mismatch : RunStatus::Pass, 0, "");
        }
    });
}

TraceEvent trace_event(TraceEventKind kind, const std::string& category, const std::string& name,
                       std::int64_t t0, std::int64_t t1, int stream) {
    TraceEvent e;
    e.kind = kind;
    e.category = category;
    e.name = name;
    e.start_ns = t0;
    e.end_ns = t1;
    e.stream = stream;
    if (kind == TraceEventKind::EngineRange && category == "iteration") {
        e.payload = {{"side", name.substr(0, name.find('/'))}};
    }
    return e;
}

} // namespace pkbw::test
