// Whole runs through execute_run: the fake rank program for the launcher-side outcomes, the real
// pkbw-rank (host backend) end to end, and the SQLite store after each.
#include "export_command.h"
#include "pkbw/core/protocol.h"
#include "pkbw/core/sha256.h"
#include "pkbw/core/store.h"
#include "pkbw/tracer_control.h"
#include "run_test_fixture.h"
#include "store_recorder.h"

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

namespace fs = std::filesystem;
using namespace pkbw::cli;

namespace {

using pkbw::test::kCandidate;
using pkbw::test::RunTest;

} // namespace

TEST_F(RunTest, PassIsRecordedWithEveryRankAndTensor) {
    auto o = options("ok");
    ASSERT_EQ(run(o, memory), 0) << out.str() << err.str();
    const auto& r = only_run();
    EXPECT_EQ(r.status, "pass");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.start.problem_stem, "1_allreduce");
    EXPECT_EQ(r.start.problem_id, 1);
    EXPECT_EQ(r.start.backend, "host");
    EXPECT_EQ(r.start.world_size, 2);
    EXPECT_EQ(r.start.dtype, "f32");
    EXPECT_EQ(r.start.solution_sha256, pkbw::sha256_file_hex(o.solution));
    EXPECT_EQ(r.start.generation_folder, "solutions_host_f32_none_samples_test");
    ASSERT_EQ(r.ranks.size(), 2u);
    EXPECT_EQ(r.ranks[0].outcome, "ok");
    ASSERT_EQ(r.tensors.size(), 2u);
    EXPECT_TRUE(r.tensors[1].comparison.pass);
    EXPECT_EQ(r.tensors[1].comparison.numel, 4);
    EXPECT_EQ(count_kind(r, "compile_log"), 2);
    EXPECT_EQ(count_kind(r, "config"), 1);
    EXPECT_EQ(count_kind(r, "log"), 2);
    EXPECT_EQ(r.environment.gpu_names, (std::vector<std::string>{"host", "host"}));
    EXPECT_NE(out.str().find("trial 0: match"), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("all trials match"), std::string::npos);

    // Second run: both sides come from the cache.
    ASSERT_EQ(run(o, memory), 0);
    EXPECT_NE(out.str().find("compile reference: cached"), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("compile candidate: cached"), std::string::npos) << out.str();
}

TEST_F(RunTest, MismatchNamesTrialAndRank) {
    ASSERT_EQ(run(options("mismatch"), memory), 1);
    const auto& r = only_run();
    EXPECT_EQ(r.status, "mismatch");
    EXPECT_EQ(r.summary.rfind("trial 0 rank 1: mismatch", 0), 0u) << r.summary;
    EXPECT_EQ(r.ranks[1].outcome, "mismatch");
    EXPECT_FALSE(r.tensors[1].comparison.pass);
    EXPECT_EQ(r.tensors[1].comparison.mismatch_count, 2);
    EXPECT_NE(out.str().find("trial 0: mismatch | rank 1:"), std::string::npos) << out.str();
    EXPECT_NE(out.str().find("rank 1: mismatch | output: 2/4 mismatched"), std::string::npos) << out.str();
}

TEST_F(RunTest, HangIsTimeoutWithRankRecords) {
    auto o = options("hang");
    o.timeouts.seconds["candidate"] = 1;
    ASSERT_EQ(run(o, memory), 1);
    const auto& r = only_run();
    EXPECT_EQ(r.status, "timeout");
    EXPECT_NE(r.summary.find("rank 1 timed out in phase candidate"), std::string::npos) << r.summary;
    ASSERT_EQ(r.ranks.size(), 2u);
    for (const auto& rank : r.ranks) {
        if (rank.rank == 1) {
            EXPECT_EQ(rank.outcome, "timeout");
            EXPECT_EQ(rank.phase, "candidate");
            EXPECT_EQ(rank.signal, SIGKILL);
        } else {
            EXPECT_EQ(rank.outcome, "skipped");
            EXPECT_EQ(rank.phase, "compare");
        }
    }
}

TEST_F(RunTest, SegfaultIsCrash) {
    ASSERT_EQ(run(options("segv"), memory), 1);
    const auto& r = only_run();
    EXPECT_EQ(r.status, "crash");
    EXPECT_NE(r.summary.find("rank 1 crashed with SIGSEGV in phase candidate"), std::string::npos)
        << r.summary;
}

TEST_F(RunTest, CrashAfterTheTrialsResultKeepsTheVerdictAndRecordsTheCrash) {
    ASSERT_EQ(run(options("segv_after_result"), memory), 1);
    const auto& r = only_run();
    EXPECT_EQ(r.status, "crash");
    EXPECT_NE(r.summary.find("rank 1 crashed with SIGSEGV in phase compare"), std::string::npos) << r.summary;
    int verdicts = 0, crashes = 0;
    for (const auto& rank : r.ranks) {
        if (rank.trial == 0) {
            ++verdicts;
            EXPECT_EQ(rank.outcome, "ok") << "rank " << rank.rank;
        } else {
            ++crashes;
            EXPECT_EQ(rank.rank, 1);
            EXPECT_EQ(rank.trial, pkbw::kAfterLastResult);
            EXPECT_EQ(rank.outcome, "crash");
            EXPECT_EQ(rank.phase, "compare");
            EXPECT_EQ(rank.signal, SIGSEGV);
        }
    }
    EXPECT_EQ(verdicts, 2);
    EXPECT_EQ(crashes, 1);

    // The same rows go into SQLite: the crash row does not collide with rank 1's trial-0 verdict.
    const fs::path store_path = dir.path() / "runs.db";
    {
        auto recorder = open_store_recorder(store_path);
        ASSERT_EQ(run(options("segv_after_result"), *recorder), 1) << err.str();
    }
    auto store = pkbw::Store::open_read_only(store_path);
    const auto rows = store.rank_results(store.list_runs().at(0).id);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows.front().trial, pkbw::kAfterLastResult);
    EXPECT_EQ(rows.front().outcome, pkbw::RankOutcome::Crash);
    std::ostringstream shown, show_err;
    ASSERT_EQ(show_run(store_path, store.list_runs().at(0).id, false, shown, show_err), 0) << show_err.str();
    EXPECT_NE(
        shown.str().find("  after the last trial result:\n    rank 1: crash | rank 1 crashed with SIGSEGV"),
        std::string::npos)
        << shown.str();
    EXPECT_NE(shown.str().find("  trial 0:\n    rank 0: ok\n"), std::string::npos) << shown.str();
}

TEST_F(RunTest, NcclKernelsInTheCandidatesTraceAreAWarning) {
    auto o = options("nccl_trace");
    o.trace_iterations = 1;
    ASSERT_EQ(run(o, memory), 0) << err.str();
    const auto& r = only_run();
    EXPECT_EQ(r.status, "pass");
    EXPECT_NE(r.summary.find("warning: runs NCCL kernels (AllReduce) in its traced iterations on rank(s) 1"),
              std::string::npos)
        << r.summary;
    EXPECT_EQ(r.trace_events, 4u); // per rank: the iteration range and the kernel
}

// The store keeps what the run said beside its verdict with its severity (run_flags): the code flag with
// the engine's severity and reason, once (it is also one of the verdict's warnings), then the other
// warnings as "warning".
TEST_F(RunTest, FlagsAreRecordedWithTheirSeverity) {
    auto o = options("nccl_trace");
    o.trace_iterations = 1;
    o.solution = dir.write("solutions_host_f32_none_samples_test/1_allreduce_host.cpp",
                           R"(#include "pkbw/solution.h"
#include <thread>
void helper() { std::thread([] {}).join(); }
extern "C" int pkbw_solution(const pkbw::Context&) { return 0; }
)")
                     .string();
    ASSERT_EQ(run(o, memory), 0) << err.str();
    const auto& flags = only_run().flags;
    ASSERT_GE(flags.size(), 2u);
    EXPECT_EQ(flags[0].severity, "suspect");
    EXPECT_EQ(flags[0].text.rfind("starts host threads", 0), 0u) << flags[0].text;
    EXPECT_FALSE(flags[0].reason.empty());
    int threads = 0, traced = 0;
    for (const auto& flag : flags) {
        threads += flag.text.rfind("starts host threads", 0) == 0;
        if (flag.text.find("runs NCCL kernels") != std::string::npos) {
            ++traced;
            EXPECT_EQ(flag.severity, "warning");
        }
    }
    EXPECT_EQ(threads, 1);
    EXPECT_EQ(traced, 1);
}

// What the candidate's process leaves in trace/candidate costs only itself: each bad file is named in
// the run's warnings, nothing of a link's target is stored, and the judges' traces are.
TEST_F(RunTest, BadCandidateTraceFilesAreLeftOutAndNamed) {
    auto o = options("bad_candidate_trace");
    o.trace_iterations = 1;
    ASSERT_EQ(run(o, memory), 0) << err.str();
    const auto& r = only_run();
    EXPECT_EQ(r.status, "pass");
    EXPECT_EQ(r.trace_events, 4u) << r.summary; // the judges' two per rank, none from the link's target
    for (const char* text :
         {"warning: trace file left out: trace/candidate/rank_0.engine.jsonl: a symbolic "
          "link: not followed",
          "warning: trace file left out: trace/candidate/rank_1.cupti.jsonl: 1073741824 "
          "bytes, over the cap of 268435456 bytes: not read",
          "warning: trace file left out: trace/candidate/rank_1.engine.jsonl:1: invalid JSON"})
        EXPECT_NE(r.summary.find(text), std::string::npos) << text << "\n" << r.summary;
    EXPECT_NE(err.str().find("pkbw: a trace file is left out: "), std::string::npos) << err.str();
}

TEST_F(RunTest, EnvironmentExitIsErrorThree) {
    ASSERT_EQ(run(options("exit3"), memory), 3);
    EXPECT_EQ(only_run().status, "error");
}

TEST_F(RunTest, CompileErrorIsTheRunsResult) {
    auto o = options();
    o.solution =
        dir.write("bad/1_allreduce_host.cpp", "#include \"pkbw/solution.h\"\nint broken( {\n").string();
    ASSERT_EQ(run(o, memory), 1);
    const auto& r = only_run();
    EXPECT_EQ(r.status, "compile_error");
    EXPECT_EQ(r.summary.rfind(o.solution + ":2:", 0), 0u) << r.summary;
    EXPECT_EQ(count_kind(r, "compile_log"), 2);
    EXPECT_EQ(count_kind(r, "log"), 0); // never launched
    EXPECT_NE(out.str().find("compile candidate: FAILED"), std::string::npos);
}

TEST_F(RunTest, JsonLinesEndWithRunFinished) {
    auto o = options("ok");
    o.json = true;
    ASSERT_EQ(run(o, memory), 0);
    std::istringstream lines(out.str());
    std::string line;
    std::vector<std::string> events;
    nlohmann::json last;
    while (std::getline(lines, line)) {
        auto message = pkbw::protocol::parse_line(line, "stdout");
        events.push_back(message.event);
        last = message.body;
    }
    ASSERT_GE(events.size(), 6u);
    EXPECT_EQ(events.front(), "run_started");
    EXPECT_EQ(events[1], "compile");
    EXPECT_EQ(events.back(), "run_finished");
    EXPECT_EQ(last["status"], "pass");
    EXPECT_EQ(last["exit_code"], 0);
    EXPECT_EQ(last["trials"].size(), 1u);
    EXPECT_EQ(last["trials"][0]["ranks"].size(), 2u);
    EXPECT_EQ(std::count(events.begin(), events.end(), "rank_exit"), 2);
}

// The real rank program on the host backend, recorded in a real store.
class EndToEnd : public RunTest, public ::testing::WithParamInterface<int> {};

TEST_P(EndToEnd, HostBackendPassesAndMismatchesIntoTheStore) {
    fs::path store_path = dir.path() / "store/runs.db";
    auto recorder = open_store_recorder(store_path);
    auto o = options();
    o.rank_program = PKBW_RANK_PROGRAM;
    o.nproc = GetParam();
    o.trials = 2;
    o.solution = std::string(PKBW_TEST_SOURCE_ROOT) +
                 "/samples/solutions_host_f32_none_samples_baseline/1_allreduce_host.cpp";
    ASSERT_EQ(run(o, *recorder), 0) << out.str() << err.str();

    // A candidate that computes nothing: every rank mismatches on trial 0 and the run stops there.
    o.solution = dir.write("zero/1_allreduce_host.cpp", R"(#include "pkbw/solution.h"
#include <cstring>
extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    std::memset(ctx.output(0).data, 0, ctx.output(0).nbytes());
    return 0;
}
)")
                     .string();
    ASSERT_EQ(run(o, *recorder), 1) << out.str() << err.str();
    EXPECT_NE(out.str().find("trial 0: mismatch"), std::string::npos) << out.str();
    recorder.reset();

    auto store = pkbw::Store::open_read_only(store_path);
    EXPECT_EQ(store.integrity_check(), "ok");
    auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 2u);
    const auto& pass = runs[1].status == pkbw::RunStatus::Pass ? runs[1] : runs[0];
    const auto& fail = runs[1].status == pkbw::RunStatus::Pass ? runs[0] : runs[1];
    EXPECT_EQ(pass.status, pkbw::RunStatus::Pass);
    EXPECT_EQ(fail.status, pkbw::RunStatus::Mismatch) << fail.summary;
    EXPECT_EQ(pass.exit_code, 0);
    EXPECT_EQ(pass.world_size, GetParam());
    // Every rank's device, from its hello, is in the run row (the host backend names it "host").
    EXPECT_EQ(pass.gpu_names, std::vector<std::string>(static_cast<std::size_t>(GetParam()), "host"));
    EXPECT_EQ(pass.generation.label, "solutions_host_f32_none_samples_baseline");
    EXPECT_EQ(store.rank_results(pass.id).size(), static_cast<std::size_t>(2 * GetParam()));
    EXPECT_EQ(store.tensor_results(pass.id, false).size(), static_cast<std::size_t>(2 * GetParam()));
    auto failed = store.tensor_results(fail.id, false);
    ASSERT_EQ(failed.size(), static_cast<std::size_t>(GetParam()));
    EXPECT_FALSE(failed[0].pass);
    EXPECT_GT(failed[0].mismatch_count, 0);
}

// ABI version 2's services in the candidate's own process (pkbw-candidate, sandboxed): an all-reduce
// in two stages over PKB-style groups, summing within consecutive blocks, then across them (strided);
// wrong groups or a wrong exchange would be a mismatch.
TEST_P(EndToEnd, SubCommsInTheCandidateProcess) {
    auto o = options();
    o.rank_program = PKBW_RANK_PROGRAM;
    o.nproc = GetParam();
    o.trials = 1;
    o.solution = dir.write("subcomm/1_allreduce_host.cpp", R"(#include "pkbw/solution.h"
#include <vector>
extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const auto& in = ctx.input(0);
    const long long n = in.numel();
    const int block = ctx.world_size / 2 > 0 ? ctx.world_size / 2 : 1;
    const pkbw::SubComm inner = ctx.sub_comm_blocks(block), outer = ctx.sub_comm_strided(block);
    if (inner.world_rank(inner.rank) != ctx.rank || outer.world_rank(outer.rank) != ctx.rank)
        return ctx.fail("this rank is not where its groups say");
    if (ctx.param_list("no_such_list", nullptr, 0) != -1)
        return ctx.fail("param_list found a list the problem does not have");
    std::vector<float> all(static_cast<size_t>(n) * inner.size), partial(static_cast<size_t>(n), 0.f);
    ctx.all_gather_host(inner, in.data, in.nbytes(), all.data());
    for (int r = 0; r < inner.size; ++r)
        for (long long i = 0; i < n; ++i) partial[i] += all[r * n + i];
    std::vector<float> partials(static_cast<size_t>(n) * outer.size);
    ctx.all_gather_host(outer, partial.data(), in.nbytes(), partials.data());
    float* out = ctx.output(0).as<float>();
    for (long long i = 0; i < n; ++i) {
        float sum = 0;
        for (int r = 0; r < outer.size; ++r) sum += partials[r * n + i];
        out[i] = sum;
    }
    return 0;
}
)")
                     .string();
    ASSERT_EQ(run(o, memory), 0) << out.str() << err.str();
}

INSTANTIATE_TEST_SUITE_P(Ranks, EndToEnd, ::testing::Values(2, 4));

// Solutions that misbehave on the real rank program (host backend), each with its diagnosis.
class HostMisbehaviour : public RunTest {
protected:
    RunOptions real(const std::string& name, const char* source) {
        auto o = options();
        o.rank_program = PKBW_RANK_PROGRAM;
        o.trials = 2;
        o.solution = dir.write(name + "/1_allreduce_host.cpp", source).string();
        return o;
    }
    std::string sample() const {
        return std::string(PKBW_TEST_SOURCE_ROOT) +
               "/samples/solutions_host_f32_none_samples_baseline/1_allreduce_host.cpp";
    }
};

TEST_F(HostMisbehaviour, WrongOnOneRankIsAMismatchNamingThatRank) {
    auto o = real("wrong_rank1", R"(#include "pkbw/solution.h"
#include <vector>
extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const auto& in = ctx.input(0);
    std::vector<float> all(static_cast<size_t>(in.numel()) * ctx.world_size);
    ctx.all_gather_host(in.data, in.nbytes(), all.data());
    float* out = ctx.output(0).as<float>();
    for (long long i = 0; i < in.numel(); ++i) {
        float sum = 0;
        for (int r = 0; r < ctx.world_size; ++r) sum += all[r * in.numel() + i];
        out[i] = sum;
    }
    if (ctx.rank == 1) out[5] += 1.0f;
    return 0;
}
)");
    ASSERT_EQ(run(o, memory), 1) << out.str() << err.str();
    const auto& r = only_run();
    EXPECT_EQ(r.status, "mismatch");
    int mismatched_ranks = 0;
    for (const auto& rank : r.ranks) {
        if (rank.outcome == "mismatch") {
            EXPECT_EQ(rank.rank, 1);
            ++mismatched_ranks;
        }
    }
    EXPECT_EQ(mismatched_ranks, 1);
    EXPECT_NE(out.str().find("rank 1"), std::string::npos) << out.str();
}

TEST_F(HostMisbehaviour, WritePastAnOutputIsInvalidOutput) {
    auto o = real("oob", R"(#include "pkbw/solution.h"
extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    float* out = ctx.output(0).as<float>();
    for (long long i = 0; i <= ctx.output(0).numel() + 3; ++i) out[i] = 0;  // four elements too far
    return 0;
}
)");
    ASSERT_EQ(run(o, memory), 1);
    EXPECT_EQ(only_run().status, "invalid_output") << only_run().summary;
    EXPECT_NE(only_run().summary.find("past the end of output"), std::string::npos) << only_run().summary;
}

TEST_F(HostMisbehaviour, MutatedInputIsInvalidOutput) {
    auto o = real("mutate", R"(#include "pkbw/solution.h"
#include <cstring>
extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    std::memset(ctx.input(0).data, 0, ctx.input(0).nbytes());
    std::memset(ctx.output(0).data, 0, ctx.output(0).nbytes());
    return 0;
}
)");
    ASSERT_EQ(run(o, memory), 1);
    EXPECT_EQ(only_run().status, "invalid_output") << only_run().summary;
    EXPECT_NE(only_run().summary.find("modified input"), std::string::npos) << only_run().summary;
}

TEST_F(HostMisbehaviour, HangOnOneRankIsATimeoutNamingIt) {
    auto o = real("hang", R"(#include "pkbw/solution.h"
#include <unistd.h>
extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    if (ctx.rank == 1) for (;;) pause();
    return 0;
}
)");
    o.timeouts.seconds["candidate"] = 3;
    ASSERT_EQ(run(o, memory), 1);
    EXPECT_EQ(only_run().status, "timeout") << only_run().summary;
    EXPECT_NE(only_run().summary.find("rank 1"), std::string::npos) << only_run().summary;
    EXPECT_NE(only_run().summary.find("candidate"), std::string::npos) << only_run().summary;
}

// The perf phase reports its own progress: every rank sends perf_progress for each timed block,
// numbered 1..N against an N known from the first (2 PKB series and 2x2 pkbw blocks here, one launch).
TEST_F(HostMisbehaviour, PerfPhaseReportsEachTimedBlockAgainstItsCount) {
    auto o = options();
    o.rank_program = PKBW_RANK_PROGRAM;
    o.mode = "perf";
    o.perf = true;
    o.trials = 1;
    o.launches = 1;
    o.json = true;
    o.solution = sample();
    o.perf_options = {
        {"pkb_warmup", 2}, {"pkb_iterations", 5}, {"warmup", 2}, {"pairs", 2}, {"iterations", 4}};
    ASSERT_EQ(run(o, memory), 0) << out.str() << err.str();
    std::map<int, std::vector<int>> blocks_seen;
    std::istringstream lines(out.str());
    for (std::string line; std::getline(lines, line);) {
        const auto event = nlohmann::json::parse(line, nullptr, false);
        if (event.is_object() && event.value("event", "") == "perf_progress") {
            EXPECT_EQ(event.at("blocks").get<int>(), 6) << line;
            blocks_seen[event.at("rank").get<int>()].push_back(event.at("block").get<int>());
        }
    }
    ASSERT_EQ(blocks_seen.size(), 2u) << out.str();
    for (const auto& [rank, seen] : blocks_seen)
        EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4, 5, 6})) << "rank " << rank;
}

// Perf over two launches and a traced pass on the host backend: samples and traces land in the store,
// and the trace exports as Chrome trace JSON.
TEST_F(HostMisbehaviour, PerfAndTraceAreStoredAndExported) {
    fs::path store_path = dir.path() / "store/runs.db";
    auto recorder = open_store_recorder(store_path);
    auto o = options();
    o.rank_program = PKBW_RANK_PROGRAM;
    o.mode = "perf";
    o.perf = true;
    o.trials = 1;
    o.launches = 2;
    o.solution = sample();
    o.perf_options = {
        {"pkb_warmup", 2}, {"pkb_iterations", 5}, {"warmup", 2}, {"pairs", 2}, {"iterations", 4}};
    o.trace_iterations = 3;
    ASSERT_EQ(run(o, *recorder), 0) << out.str() << err.str();
    EXPECT_NE(out.str().find("speedup"), std::string::npos) << out.str();
    recorder.reset();
    auto store = pkbw::Store::open_read_only(store_path);
    const auto run_row = store.list_runs().at(0);
    const auto samples = store.perf_samples(run_row.id);
    // PKB series (block -1, 5 per rank and side, first launch only) plus 2x2 pkbw blocks in each of the
    // two launches (the second's numbered from 1000), each one figure per rank, on 2 ranks.
    EXPECT_EQ(samples.size(), static_cast<std::size_t>(2 * (2 * 5 + 4 * 1 + 4 * 1)));
    int second_launch = 0;
    for (const auto& row : samples)
        second_launch += row.block >= 1000 ? 1 : 0;
    EXPECT_EQ(second_launch, 2 * 4);
    bool has_speedup = false;
    double launches = 0;
    for (const auto& row : store.perf_summaries(run_row.id)) {
        has_speedup = has_speedup || row.statistic == "speedup";
        launches = row.statistic == "launches" ? row.value : launches;
    }
    EXPECT_TRUE(has_speedup);
    EXPECT_EQ(launches, 2);
    const fs::path exported = dir.path() / "trace.json";
    ASSERT_EQ(run_export_command(store_path.string(), run_row.id, "chrome-trace", exported.string()), 0);
    const auto trace = nlohmann::json::parse(std::ifstream(exported));
    int iterations = 0, phases = 0, warmups = 0;
    for (const auto& event : trace["traceEvents"]) {
        const std::string cat = event.value("cat", "");
        iterations += cat.find("iteration") != std::string::npos;
        phases += cat.find("phase") != std::string::npos;
        warmups += cat.find("warmup") != std::string::npos;
    }
    EXPECT_EQ(iterations, 2 * 2 * 3); // ranks x sides x iterations
    EXPECT_EQ(warmups, 2 * 2);        // one untraced-as-iteration call per rank and side first
    EXPECT_GT(phases, 0);
    EXPECT_EQ(store.integrity_check(), "ok");
}

// Only a perf run's first launch is traced: a later launch's ranks get none of the tracing variables, so
// none of them loads the tracer, which would open the first launch's rank_<r>.cupti.jsonl again and
// leave it empty (the H200: every traced perf run's reference side had no kernels).
TEST(LaterLaunch, CarriesNoTracingVariablesAndItsOwnConfig) {
    LaunchSpec first;
    first.program = "/opt/pkbw/bin/pkbw-rank";
    first.args = {"--config", "/runs/r/config.json"};
    first.world_size = 2;
    first.extra_env["OMP_NUM_THREADS"] = "4";
    for (const auto& [name, value] :
         pkbw::tracer::tracing_environment("/opt/pkbw/lib/libpkbw_tracer.so", "/runs/r/trace"))
        first.extra_env[name] = value;
    first.extra_env["NVTX_INJECTION64_PATH"] = "/opt/cuda/lib64/libcupti.so";
    const LaunchSpec later = later_launch_spec(first, "/runs/r/config_launch1.json");
    for (const char* name : pkbw::tracer::kTracingVariables)
        EXPECT_EQ(later.extra_env.count(name), 0u) << name;
    EXPECT_EQ(later.extra_env.at("OMP_NUM_THREADS"), "4");
    EXPECT_EQ(later.args, (std::vector<std::string>{"--config", "/runs/r/config_launch1.json"}));
    EXPECT_EQ(later.program, first.program);
    EXPECT_EQ(later.world_size, 2);
    EXPECT_EQ(first.extra_env.count("CUDA_INJECTION64_PATH"), 1u); // the first launch keeps its tracing
}
