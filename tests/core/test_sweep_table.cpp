// The sweep table's fast_p rule on a real store (pkbw/core/sweep_table.h): a pair counts as faster
// than p only when it is correct and its stored 95% interval clears p (ci_low > p); a pair stored
// without an interval (older runs) counts when its speedup > p; the verdict is read from its code.
#include "pkbw/core/sweep_table.h"
#include "store_test_util.h"

#include <cmath>
#include <gtest/gtest.h>

namespace pkbw {
namespace {

using test::StoreTest;

struct Figures {
    std::optional<double> speedup, ci_low, ci_high, verdict_code;
};

// A finished perf run of `problem` with the given stored figures (side candidate, rank -1).
std::int64_t perf_run(Store& store, const std::string& problem, RunStatus status, const Figures& f) {
    RunRecord run;
    run.problem_stem = problem;
    run.mode = RunMode::Perf;
    run.backend = "host";
    run.world_size = 2;
    const auto id = store.begin_run(run);
    const std::pair<const char*, std::optional<double>> rows[] = {{"speedup", f.speedup},
                                                                  {"speedup_ci_low", f.ci_low},
                                                                  {"speedup_ci_high", f.ci_high},
                                                                  {"verdict", f.verdict_code}};
    for (const auto& [name, value] : rows)
        if (value)
            store.add_perf_summary({id, Side::Candidate, -1, name, *value});
    store.finish_run(id, status, 0, "");
    return id;
}

class SweepTableTest : public StoreTest {
protected:
    // One generation of pairs, one per run, all done; returns the table.
    SweepTable table_of(Store& store, const std::vector<std::int64_t>& runs) {
        std::vector<SweepPair> pairs;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            SweepPair p;
            p.generation_label = "solutions_host_f32_none_a_b";
            p.problem_stem = store.get_run(runs[i])->problem_stem;
            p.solution_path = "/s/" + p.problem_stem + ".cpp";
            p.position = static_cast<int>(i);
            pairs.push_back(p);
        }
        SweepRecord s;
        s.mode = "perf";
        s.backend = "host";
        s.world_size = 2;
        const auto id = create_sweep(store, s, pairs);
        for (std::size_t i = 0; i < runs.size(); ++i) {
            pairs[i].state = "done";
            pairs[i].run_id = runs[i];
            record_sweep_pair(store, id, pairs[i]);
        }
        return sweep_table(store, id);
    }
};

TEST(FastPRule, IntervalMustClearP) {
    // 1.3x whose interval reaches down to 0.98: not faster than 1; with 1.02 it is.
    EXPECT_FALSE(counts_toward_fast_p(true, 1.3, 0.98, 1.0));
    EXPECT_TRUE(counts_toward_fast_p(true, 1.3, 1.02, 1.0));
    EXPECT_FALSE(counts_toward_fast_p(true, 1.3, 1.0, 1.0));   // clears means strictly above
    EXPECT_FALSE(counts_toward_fast_p(false, 1.3, 1.02, 1.0)); // not correct
    EXPECT_TRUE(counts_toward_fast_p(true, 1.3, 0.98, 0.0));   // p = 0: correct
    EXPECT_TRUE(counts_toward_fast_p(true, std::nullopt, std::nullopt, 0.0));
    EXPECT_FALSE(counts_toward_fast_p(false, std::nullopt, std::nullopt, 0.0));
    EXPECT_FALSE(counts_toward_fast_p(true, std::nullopt, std::nullopt, 1.0));
    // Legacy (no interval stored): the speedup alone.
    EXPECT_TRUE(counts_toward_fast_p(true, 1.3, std::nullopt, 1.0));
    EXPECT_FALSE(counts_toward_fast_p(true, 0.9, std::nullopt, 1.0));
    // A non-finite stored bound clears nothing.
    EXPECT_FALSE(counts_toward_fast_p(true, 1.3, std::nan(""), 1.0));
    EXPECT_EQ(fast_bound(1.3, 1.02), 1.02);
    EXPECT_EQ(fast_bound(1.3, std::nullopt), 1.3);
}

TEST(StoredSpeedup, ReadsPooledFiguresLaunchesAndVerdictCodes) {
    std::vector<PerfSummaryRow> rows = {
        {1, Side::Candidate, -1, "speedup", 1.31},         {1, Side::Candidate, -1, "speedup_ci_low", 1.05},
        {1, Side::Candidate, -1, "speedup_ci_high", 1.6},  {1, Side::Candidate, -1, "verdict", 1},
        {1, Side::Candidate, -1, "verdict_band", 0.05},    {1, Side::Candidate, -1, "launches", 3},
        {1, Side::Candidate, -1, "launch_speedup_1", 1.4}, {1, Side::Candidate, -1, "launch_speedup_0", 1.2},
        {1, Side::Candidate, -1, "launch_ci_low_0", 1.1},  {1, Side::Candidate, -1, "launch_ci_high_0", 1.3},
        {1, Side::Candidate, 0, "speedup", 9.0}, // a rank's row is not the pooled figure
        {1, Side::Reference, -1, "speedup", 9.0},
    };
    StoredSpeedup s = stored_speedup(rows);
    EXPECT_EQ(s.speedup, 1.31);
    EXPECT_EQ(s.ci_low, 1.05);
    EXPECT_EQ(s.ci_high, 1.6);
    EXPECT_EQ(s.verdict, Verdict::Faster);
    EXPECT_EQ(s.band, 0.05);
    EXPECT_EQ(s.launches, 3);
    ASSERT_EQ(s.per_launch.size(), 2u);
    EXPECT_EQ(s.per_launch[0].index, 0);
    EXPECT_EQ(s.per_launch[0].speedup, 1.2);
    EXPECT_EQ(s.per_launch[0].ci_low, 1.1);
    EXPECT_EQ(s.per_launch[1].speedup, 1.4);
    EXPECT_FALSE(s.per_launch[1].ci_low.has_value());
    // The codes: 2 ambiguous, -1 slower, 0 same (and the old "within noise").
    rows[3].value = 2;
    EXPECT_EQ(stored_speedup(rows).verdict, Verdict::Ambiguous);
    rows[3].value = -1;
    EXPECT_EQ(stored_speedup(rows).verdict, Verdict::Slower);
    rows[3].value = 0;
    EXPECT_EQ(stored_speedup(rows).verdict, Verdict::Same);
    EXPECT_FALSE(stored_speedup({}).speedup.has_value());
}

TEST_F(SweepTableTest, FastOneCountsOnlyPairsWhoseIntervalClearsOne) {
    Store store = Store::open(db_path());
    const std::vector<std::int64_t> runs = {
        // 1.3x but its interval reaches 0.98: ambiguous, not toward fast_1.
        perf_run(store, "1_allreduce", RunStatus::Pass, {1.3, 0.98, 1.7, 2}),
        // 1.3x, interval 1.02-1.6: faster, toward fast_1 (not fast_1.5: 1.02 does not clear 1.5).
        perf_run(store, "2_allgather", RunStatus::Pass, {1.3, 1.02, 1.6, 1}),
        // A run stored before intervals (legacy code 0): its speedup 1.2 > 1 counts toward fast_1.
        perf_run(store, "3_broadcast", RunStatus::Pass, {1.2, std::nullopt, std::nullopt, 0}),
        // 2.5x, interval 2.1-2.9: toward fast_2.
        perf_run(store, "4_reduce_scatter", RunStatus::Pass, {2.5, 2.1, 2.9, 1}),
        // Wrong output: correct no, whatever its figures.
        perf_run(store, "5_all_to_all", RunStatus::Mismatch, {3.0, 2.5, 3.5, 1}),
    };
    const SweepTable table = table_of(store, runs);
    ASSERT_EQ(table.generations.size(), 1u);
    const SweepGenerationRow& row = table.generations[0];
    EXPECT_EQ(row.attempted, 5);
    EXPECT_EQ(row.correct, 4);
    EXPECT_EQ(row.timed, 4);
    EXPECT_EQ(row.faster, 2); // verdict faster (code 1): not the ambiguous one (code 2 > 0.5)
    EXPECT_DOUBLE_EQ(row.fast_p(0), 4.0 / 5);
    EXPECT_DOUBLE_EQ(row.fast_p(1), 3.0 / 5); // 2_allgather, the legacy 3_broadcast, 4_reduce_scatter
    EXPECT_DOUBLE_EQ(row.fast_p(1.5), 1.0 / 5);
    EXPECT_DOUBLE_EQ(row.fast_p(2), 1.0 / 5);
    EXPECT_DOUBLE_EQ(row.fast_p(2.1), 0.0); // 2.1 does not clear 2.1
    EXPECT_EQ(row.verdicts.at("ambiguous"), 1);
    EXPECT_EQ(row.verdicts.at("faster"), 2);
    EXPECT_EQ(row.verdicts.at("same"), 1); // the legacy code 0
    ASSERT_EQ(row.speedups.size(), 4u);
    EXPECT_NEAR(*row.geomean(), std::pow(1.3 * 1.3 * 1.2 * 2.5, 0.25), 1e-12);

    // Per pair: the verdict and interval as stored, the same figures every surface reads.
    ASSERT_EQ(table.pairs.size(), 5u);
    const SweepPairView& ambiguous = table.pairs[0];
    EXPECT_EQ(ambiguous.speedup, 1.3);
    EXPECT_EQ(ambiguous.ci_low, 0.98);
    EXPECT_EQ(ambiguous.ci_high, 1.7);
    EXPECT_EQ(ambiguous.verdict, Verdict::Ambiguous);
    EXPECT_FALSE(ambiguous.faster);
    EXPECT_EQ(table.pairs[1].verdict, Verdict::Faster);
    EXPECT_TRUE(table.pairs[1].faster);
    EXPECT_FALSE(table.pairs[2].ci_low.has_value());
    EXPECT_EQ(table.pairs[2].verdict, Verdict::Same);
    EXPECT_FALSE(table.pairs[4].speedup.has_value()); // a mismatch is not timed
    for (const auto& pair : table.pairs)
        EXPECT_EQ(counts_toward_fast_p(pair.status == "pass", pair.speedup, pair.ci_low, 1.0),
                  pair.pair.problem_stem == "2_allgather" || pair.pair.problem_stem == "3_broadcast" ||
                      pair.pair.problem_stem == "4_reduce_scatter")
            << pair.pair.problem_stem;
}

TEST_F(SweepTableTest, LowEndOfTheIntervalDecidesNotTheSpeedup) {
    Store store = Store::open(db_path());
    const SweepTable table =
        table_of(store, {perf_run(store, "1_allreduce", RunStatus::Pass, {1.3, 0.98, 1.7, 2})});
    EXPECT_DOUBLE_EQ(table.generations.at(0).fast_p(1), 0.0);
    Store other = Store::open(dir_ / "other" / "runs.db");
    const SweepTable clears =
        table_of(other, {perf_run(other, "1_allreduce", RunStatus::Pass, {1.3, 1.02, 1.7, 1})});
    EXPECT_DOUBLE_EQ(clears.generations.at(0).fast_p(1), 1.0);
}

// The paper figures every surface reads (PaperFigures): invalid_timing is neither correct nor timed,
// fast_p >= 1 goes by the verdict (an interval above 1 inside the 5% band is "same", not faster), a
// pkbw/PKB disagreement in direction counts toward no fast_p >= 1, and the curve reads the table.
TEST_F(SweepTableTest, PaperFiguresCountByTrustAndVerdict) {
    Store store = Store::open(db_path());
    const std::vector<std::int64_t> runs = {
        perf_run(store, "1_allreduce", RunStatus::InvalidTiming, {3.385, 3.338, 3.552, 1}),
        perf_run(store, "2_allgather", RunStatus::Pass, {1.03, 1.01, 1.045, 0}), // same, though > 1
        perf_run(store, "3_broadcast", RunStatus::Pass, {1.4, 1.2, 1.6, 1}),
        perf_run(store, "4_reduce_scatter", RunStatus::Pass, {2.5, 2.1, 2.9, 1}),
    };
    store.add_perf_summary({runs[2], Side::Candidate, -1, "pkb_speedup", 0.7}); // PKB: slower
    const SweepTable table = table_of(store, runs);
    const SweepGenerationRow& row = table.generations.at(0);
    EXPECT_EQ(row.attempted, 4);
    EXPECT_EQ(row.correct, 3);
    EXPECT_EQ(row.timed, 3);
    EXPECT_EQ(row.faster, 1); // 4_reduce_scatter; 3_broadcast is disputed
    EXPECT_EQ(row.disputed, 1);
    EXPECT_EQ(row.failures.at("invalid_timing"), 1);
    EXPECT_FALSE(table.pairs[0].speedup.has_value()); // withheld
    EXPECT_TRUE(table.pairs[2].disputed);
    EXPECT_FALSE(table.pairs[2].faster);
    EXPECT_DOUBLE_EQ(row.fast_p(1), 1.0 / 4);
    EXPECT_DOUBLE_EQ(row.fast_p(0.99), 3.0 / 4); // below 1 the interval decides
    EXPECT_DOUBLE_EQ(row.fast_p(0), 3.0 / 4);
    // The curve drawn left-continuous reads the table at every p.
    const auto steps = row.fast_p_steps(3);
    for (double p : {0.5, 1.0, 1.5, 2.0, 2.2}) {
        double value = 0;
        for (const auto& [x, y] : steps)
            value = x <= p ? y : value;
        EXPECT_DOUBLE_EQ(value, row.fast_p(p)) << "p = " << p;
    }
    PairOutcome eval_like;
    eval_like.correct = true;
    PaperFigures figures;
    figures.add(eval_like);
    EXPECT_DOUBLE_EQ(figures.fast_p(0), 1.0);
    EXPECT_DOUBLE_EQ(figures.fast_p_steps(2).at(1).second, 0.0); // just above 0: no speedup, none
    EXPECT_TRUE(speedup_is_result(RunStatus::Pass));
    EXPECT_FALSE(speedup_is_result(RunStatus::InvalidTiming));
    EXPECT_EQ(speedup_withheld_reason(RunStatus::InvalidTiming), "timing not trusted (invalid_timing)");
    // The word every table shows in its place: the CLI's and the GUI's Runs lists agree.
    EXPECT_EQ(speedup_withheld_word(RunStatus::InvalidTiming), "untrusted");
    EXPECT_EQ(speedup_withheld_word(RunStatus::Mismatch), "withheld");
    EXPECT_EQ(speedup_withheld_word(RunStatus::Error), "withheld");
    EXPECT_EQ(speedup_withheld_word(RunStatus::Pass), "");
}

// A PKB solution's crash as the H200 sweep stored it: the first line, a traceback, the exception and
// pybind11's lines after it. The headline keeps the first line and the exception's, not the frames.
TEST(PairMessageHeadline, KeepsTheExceptionOfATraceback) {
    const std::string message =
        "rank 0 exited with code 4 in phase compile (trial 0): solution_error: the candidate raised on rank "
        "0, "
        "trial 0:\nTraceback (most recent call last):\n  File \"/x/pkbw_pkb_candidate.py\", line 1070, in "
        "serve\n"
        "    reply, reply_fds = handler(message, fds)\n                       ^^^^^^^^^^^^^^^^^^^^^\n"
        "  File \"/x/15_combined_sharded_gemms_cuda.py\", line 275, in solution\n"
        "    ext.launch_barrier(res['x_signal'], rank, world_size, ch1)\n"
        "TypeError: launch_barrier(): incompatible function arguments. The following argument types are "
        "supported:\n    1. (arg0: torch.Tensor, arg1: typing.SupportsInt) -> None\n\nInvoked with: 1406, "
        "0\n";
    const std::string line = pair_message_headline(message, 300);
    EXPECT_EQ(
        line.rfind("rank 0 exited with code 4 in phase compile (trial 0): solution_error: the candidate "
                   "raised on rank 0, trial 0: TypeError: launch_barrier(): incompatible function arguments.",
                   0),
        0u)
        << line;
    EXPECT_EQ(line.find("File "), std::string::npos) << line;
    EXPECT_LE(line.size(), 300u);
    const std::string short_line = pair_message_headline(message, 120);
    EXPECT_EQ(short_line.size(), 120u);
    EXPECT_TRUE(short_line.ends_with("...")) << short_line;
    // A chained exception: the last exception line is the one that ended the call.
    const std::string chained =
        "x:\nTraceback (most recent call last):\n  File \"a\", line 1\nKeyError: 'k'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n  File \"b\", line 2\n"
        "torch.OutOfMemoryError: CUDA out of memory.\n";
    EXPECT_EQ(pair_message_headline(chained, 300), "x: torch.OutOfMemoryError: CUDA out of memory.");
}

TEST(PairMessageHeadline, OtherMessagesAreTheirFirstBytesOnOneLine) {
    EXPECT_EQ(pair_message_headline("trial 0 rank 0: mismatch:\n  output_0:   not allclose", 300),
              "trial 0 rank 0: mismatch: output_0: not allclose");
    EXPECT_EQ(pair_message_headline(std::string(500, 'a'), 10), "aaaaaaa...");
    EXPECT_EQ(pair_message_headline("", 10), "");
    // A cut never splits a UTF-8 character: "1.25× faster" cut after the "×"'s first byte keeps none of it.
    const std::string speedup = "1.25\u00d7 faster than the reference";
    for (std::size_t limit = 4; limit < 12; ++limit) {
        const std::string cut = pair_message_headline(speedup, limit);
        EXPECT_LE(cut.size(), limit);
        for (std::size_t i = 0; i + 3 < cut.size(); ++i)
            if ((static_cast<unsigned char>(cut[i]) & 0xE0) == 0xC0)
                EXPECT_EQ(static_cast<unsigned char>(cut[i + 1]) & 0xC0, 0x80) << limit;
        EXPECT_NE(static_cast<unsigned char>(cut[cut.size() - 4]) & 0xE0, 0xC0)
            << "cut " << limit << ": " << cut;
    }
    // A message that is a traceback from its first byte: no leading space.
    EXPECT_EQ(pair_message_headline("Traceback (most recent call last):\n  File \"a\"\nValueError: x\n", 300),
              "ValueError: x");
    // "Traceback" with no exception line after it (cut short): the message as it is.
    EXPECT_EQ(pair_message_headline("failed: Traceback (most recent call last):\n  File \"a\"", 300),
              "failed: Traceback (most recent call last): File \"a\"");
}

} // namespace
} // namespace pkbw
