// Writes a fixture store for screenshots and manual checks: make_gui_fixture DIR -> DIR/fixture.db
// with an eval run (mismatch on rank 1, trial 1, outputs on disk), perf runs of two generations (the
// first printed as perf_run), a 256 x 384 bf16-like heatmap run, 200 filler runs and a synthetic
// trace on the eval run.
#include "fixtures.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/safetensors.h"
#include "pkbw/core/trace_store.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace pkbw;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const auto db = dir / "fixture.db";
    std::filesystem::remove(db);
    Store store = Store::open(db);
    test::add_many_runs(store, 200);
    const auto eval = test::add_eval_run(store, dir, "2_allgather");
    {
        // The eval run's candidate source (its solution_path), so that the sources view has a diff.
        std::ofstream source(dir / "solution.cu");
        source << "// Candidate for PKB problem 2: all-gather through NCCL on the run's stream.\n"
                  "#include \"pkbw/solution.h\"\n"
                  "\n"
                  "extern \"C\" int pkbw_solution(const pkbw::Context& ctx) {\n"
                  "    const pkbw::TensorView& in = ctx.input(0);\n"
                  "    const pkbw::TensorView& out = ctx.output(0);\n"
                  "    if (out.nbytes() != in.nbytes() * static_cast<std::size_t>(ctx.world_size)) {\n"
                  "        return ctx.fail(\"output is not [W, M, N] of the input\");\n"
                  "    }\n"
                  "    ncclAllGather(in.data, out.data, in.nbytes(), ncclUint8, ctx.nccl(), ctx.stream());\n"
                  "    return 0;\n"
                  "}\n";
    }
    const std::string g1 = "solutions_cuda_bf16_none_anthropic_claude-opus",
                      g2 = "solutions_cuda_bf16_none_openai_gpt";
    const auto perf = test::add_perf_run(store, "1_allreduce", g1, 2.0, 1.25);
    test::add_perf_run(store, "2_allgather", g1, 1.0, 1.6);
    test::add_perf_run(store, "1_allreduce", g2, 2.0, 0.9);
    test::add_perf_run(store, "2_allgather", g2, 1.0, 0.8);

    // A smooth field with a band of errors, so the heatmaps have structure to show.
    RunRecord run;
    run.problem_stem = "1_allreduce";
    run.mode = RunMode::Eval;
    run.backend = "host";
    run.world_size = 2;
    run.trials = 1;
    run.atol = run.rtol = 1e-2;
    run.run_dir = (dir / "run_heatmap").string();
    run.generation = parse_generation_label(g1);
    const auto id = store.begin_run(run);
    for (int rank = 0; rank < 2; ++rank) {
        Tensor ref = Tensor::zeros(DType::F32, {256, 384}), cand = Tensor::zeros(DType::F32, {256, 384});
        float* r = ref.mutable_data_as<float>();
        float* c = cand.mutable_data_as<float>();
        for (int i = 0; i < 256; ++i) {
            for (int j = 0; j < 384; ++j) {
                const float v = std::sin(i / 20.0f) * std::cos(j / 30.0f);
                r[i * 384 + j] = v;
                c[i * 384 + j] =
                    v + (rank == 1 && j >= 300 && j < 320 ? 0.05f * (i % 7) : 1e-4f * ((i + j) % 5));
            }
        }
        if (rank == 1) {
            c[100 * 384 + 200] = std::nanf("");
        }
        OutputSet rs, cs;
        rs.add("output", ref);
        cs.add("output", cand);
        const auto out = dir / "run_heatmap" / "outputs" / "trial_0";
        std::filesystem::create_directories(out);
        write_safetensors((out / ("rank_" + std::to_string(rank) + "_reference.safetensors")).string(), rs);
        write_safetensors((out / ("rank_" + std::to_string(rank) + "_candidate.safetensors")).string(), cs);
        CompareOptions o;
        TensorResultRow row = from_comparison(compare_tensors(ref, cand, o));
        row.run_id = id;
        row.rank = rank;
        store.add_tensor_result(row);
        RankResultRow rr;
        rr.run_id = id;
        rr.rank = rank;
        rr.outcome = row.pass ? RankOutcome::Ok : RankOutcome::Mismatch;
        store.add_rank_result(rr);
    }
    store.finish_run(id, RunStatus::Mismatch, 1, "mismatch on rank 1");

    std::vector<RankTrace> traces;
    for (int rank = 0; rank < 2; ++rank) {
        RankTrace t;
        t.rank = rank;
        t.source = "engine";
        std::int64_t now = 1'000'000;
        for (int i = 0; i < 2000; ++i) {
            pkbw::TraceEvent e;
            e.kind = TraceEventKind::Kernel;
            e.name = i % 3 ? "custom_allgather_kernel" : "ncclDevKernel_AllGather_RING_LL";
            e.stream = 7 + i % 2;
            e.start_ns = now;
            e.end_ns = now + 20'000 + (i % 11) * 3'000 + rank * 2'000;
            now = e.end_ns + 5'000;
            t.events.push_back(e);
        }
        sort_events(t.events);
        traces.push_back(std::move(t));
    }
    store_run_traces(store, eval.run_id, traces);
    std::printf("%s eval_run=%lld heatmap_run=%lld perf_run=%lld\n", db.string().c_str(),
                static_cast<long long>(eval.run_id), static_cast<long long>(id),
                static_cast<long long>(perf));
    return 0;
}
