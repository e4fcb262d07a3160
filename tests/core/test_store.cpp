// Store: opening, migrations, version refusal, and a round trip of every writer through its reader.
#include "../damaged_store.h"
#include "pkbw/core/error.h"
#include "pkbw/core/store_check.h"
#include "store_test_util.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sqlite3.h>

namespace pkbw::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Runs one statement on a raw connection, outside pkbw, as a user with the sqlite3 shell would.
std::string raw_sql(const std::filesystem::path& path, const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    std::string result;
    auto collect = [](void* out, int columns, char** values, char**) {
        for (int i = 0; i < columns; ++i)
            *static_cast<std::string*>(out) += values[i] ? values[i] : "NULL";
        return 0;
    };
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), collect, &result, &error), SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
    return result;
}

template <class F>
std::string error_of(F&& body) {
    try {
        body();
    } catch (const StoreError& error) {
        return error.what();
    }
    ADD_FAILURE() << "no StoreError";
    return {};
}

TEST_F(StoreTest, MigratesFromEmptyAndCreatesDirectories) {
    ASSERT_FALSE(std::filesystem::exists(db_path().parent_path()));
    {
        auto store = Store::open(db_path());
        EXPECT_EQ(Store::latest_schema_version(), 8);
        EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
        EXPECT_EQ(store.integrity_check(), "ok");
        EXPECT_FALSE(store.read_only());
    }
    EXPECT_EQ(raw_sql(db_path(), "PRAGMA journal_mode"), "wal");
    EXPECT_EQ(raw_sql(db_path(), "PRAGMA user_version"), "8");
    EXPECT_EQ(
        raw_sql(db_path(), "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema WHERE "
                           "type = 'table' ORDER BY name)"),
        "agent_attempts,artifacts,blobs,generation_exchanges,generations,perf_samples,perf_summaries,"
        "rank_results,run_files,run_flags,runs,sweep_pairs,sweeps,tensor_results,trace_events,trace_ranks");
}

TEST_F(StoreTest, ReopenIsIdempotent) {
    std::int64_t id = 0;
    {
        auto store = Store::open(db_path());
        id = store.begin_run(sample_run());
    }
    auto store = Store::open(db_path());
    EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
    EXPECT_EQ(store.count_runs(), 1);
    ASSERT_TRUE(store.get_run(id));
    EXPECT_EQ(store.integrity_check(), "ok");
}

TEST_F(StoreTest, RefusesNewerSchemaNamingFileAndVersions) {
    Store::open(db_path());
    raw_sql(db_path(), "PRAGMA user_version = 9");
    for (bool read_only : {false, true}) {
        std::string message = error_of([&] {
            if (read_only)
                Store::open_read_only(db_path());
            else
                Store::open(db_path());
        });
        EXPECT_NE(message.find(db_path().string()), std::string::npos) << message;
        EXPECT_NE(message.find("schema version 9 is newer than this build of pkbw knows (8)"),
                  std::string::npos)
            << message;
    }
    EXPECT_EQ(raw_sql(db_path(), "PRAGMA user_version"), "9"); // untouched
}

TEST_F(StoreTest, RefusesAFileThatIsNotAStore) {
    std::filesystem::create_directories(dir_);
    auto path = dir_ / "notes.txt";
    std::ofstream(path) << "this is not an SQLite database, just some text long enough to have a header";
    std::string message = error_of([&] { Store::open(path); });
    EXPECT_NE(message.find(path.string()), std::string::npos) << message;
    EXPECT_NE(message.find("not a database"), std::string::npos) << message;
}

TEST_F(StoreTest, ErrorsSayWhatFailedInWordsNotSql) {
    // A text file: "not a pkbw store", not the statement that first read it.
    std::filesystem::create_directories(dir_);
    const auto notes = dir_ / "notes.txt";
    std::ofstream(notes) << "this is not an SQLite database, just some text long enough to have a header";
    std::string message = error_of([&] { Store::open_read_only(notes); });
    EXPECT_EQ(message, "store " + notes.string() +
                           ": not a pkbw store: not an SQLite database (file is not a "
                           "database)");
    // One damaged table: the table, what was being done and what to do, no SQL text.
    std::int64_t id = 0;
    {
        Store store = Store::open(db_path());
        id = store.begin_run(sample_run());
        store.add_perf_samples(id, Side::Candidate, 0, 0, std::vector<double>{1.0, 2.0});
    }
    test::damage_table(db_path(), "perf_samples");
    Store store = Store::open_read_only(db_path());
    EXPECT_TRUE(store.get_run(id).has_value()); // the rest of the store reads
    message = error_of([&] { store.perf_samples(id); });
    EXPECT_NE(message.find("cannot read table perf_samples: the file is damaged (database disk image is "
                           "malformed; `pkbw store check` names what)"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("SELECT"), std::string::npos) << message;
    EXPECT_EQ(message.find('"'), std::string::npos) << message;
}

// `pkbw store check` is where a damaged store's messages send the user: its own report must not send
// them back to itself (the CLI review).
TEST_F(StoreTest, StoreCheckOfADamagedStoreDoesNotPointBackToItself) {
    {
        Store store = Store::open(db_path());
        store.begin_run(sample_run());
    }
    test::damage_table(db_path(), "runs");
    const StoreCheckReport report = check_store(db_path());
    EXPECT_FALSE(report.integrity_ok());
    EXPECT_EQ(report.integrity.find("pkbw store check"), std::string::npos) << report.integrity;
    EXPECT_NE(report.files_note.find("the file is damaged"), std::string::npos) << report.files_note;
    EXPECT_EQ(report.files_note.find("pkbw store check"), std::string::npos) << report.files_note;
    // Elsewhere the pointer stays.
    const Store reader = Store::open_read_only(db_path());
    EXPECT_NE(error_of([&] { reader.get_run(1); }).find("`pkbw store check` names what"), std::string::npos);
}

TEST_F(StoreTest, ReadOnlyOpenMissingOlderAndCreate) {
    std::string message = error_of([&] { Store::open_read_only(db_path()); });
    EXPECT_NE(message.find("no such file"), std::string::npos) << message;
    EXPECT_FALSE(std::filesystem::exists(db_path()));

    // An empty file is not a store to a reader (SQLite would read it as an empty database)...
    std::filesystem::create_directories(db_path().parent_path());
    std::ofstream(db_path()).flush();
    message = error_of([&] { Store::open_read_only(db_path()); });
    EXPECT_NE(message.find("the file is empty (0 bytes)"), std::string::npos) << message;
    EXPECT_EQ(std::filesystem::file_size(db_path()), 0u);
    // ...unless asked to create or upgrade it (older stores: test_store_access.cpp).
    auto reader = Store::open_read_only(db_path(), Store::Missing::Create);
    EXPECT_TRUE(reader.read_only());
    EXPECT_EQ(reader.schema_version(), Store::latest_schema_version());
    EXPECT_EQ(reader.count_runs(), 0);
    message = error_of([&] { reader.begin_run(sample_run()); });
    EXPECT_NE(message.find("read-only"), std::string::npos) << message;
    message = error_of([&] { Store::Transaction transaction(reader); });
    EXPECT_NE(message.find("read-only"), std::string::npos) << message;
}

TEST_F(StoreTest, RunRoundTripAndFinish) {
    auto store = Store::open(db_path());
    RunRecord run = sample_run();
    std::int64_t id = store.begin_run(run);
    auto read = store.get_run(id);
    ASSERT_TRUE(read);
    EXPECT_EQ(read->id, id);
    expect_same_run(run, *read);
    EXPECT_EQ(read->generation.model, "claude-opus-4-7");
    EXPECT_FALSE(store.get_run(id + 1000));

    // Defaults: the writer identifies itself, times and version are filled, optionals stay empty.
    RunRecord minimal;
    minimal.problem_stem = "1_add";
    minimal.backend = "host";
    minimal.dtype = "f32";
    std::int64_t id2 = store.begin_run(minimal);
    auto m = store.get_run(id2);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->writer_pid, ::getpid());
    EXPECT_FALSE(m->writer_host.empty());
    EXPECT_TRUE(m->writer_start_ticks.has_value());
    EXPECT_EQ(m->started_at.size(), 24u); // 2026-07-01T12:34:56.789Z
    EXPECT_EQ(m->started_at.back(), 'Z');
    EXPECT_TRUE(m->ended_at.empty());
    EXPECT_EQ(m->status, RunStatus::Running);
    EXPECT_FALSE(m->problem_id || m->m || m->n || m->seed || m->exit_code);
    EXPECT_EQ(m->pkbw_version, "0.1.0");

    store.finish_run(id2, RunStatus::Timeout, 124, "rank 3 timed out after 300 s",
                     "2026-07-02T00:00:00.000Z");
    m = store.get_run(id2);
    EXPECT_EQ(m->status, RunStatus::Timeout);
    EXPECT_EQ(m->exit_code, 124);
    EXPECT_EQ(m->summary, "rank 3 timed out after 300 s");
    EXPECT_EQ(m->ended_at, "2026-07-02T00:00:00.000Z");
    std::string message = error_of([&] { store.finish_run(99999, RunStatus::Pass, 0, ""); });
    EXPECT_NE(message.find("no run 99999"), std::string::npos) << message;
}

TEST_F(StoreTest, EnumTextsRoundTrip) {
    for (int i = 0; i <= static_cast<int>(RunStatus::Aborted); ++i)
        EXPECT_EQ(parse_run_status(to_string(static_cast<RunStatus>(i))), static_cast<RunStatus>(i));
    for (int i = 0; i <= static_cast<int>(RankOutcome::Skipped); ++i)
        EXPECT_EQ(parse_rank_outcome(to_string(static_cast<RankOutcome>(i))), static_cast<RankOutcome>(i));
    EXPECT_EQ(to_string(RunStatus::InvalidOutput), "invalid_output");
    EXPECT_EQ(to_string(RunMode::Dryrun), "dryrun");
    EXPECT_FALSE(parse_run_status("passed"));
}

TEST_F(StoreTest, RankResultsRoundTrip) {
    auto store = Store::open(db_path());
    std::int64_t id = store.begin_run(sample_run());
    RankResultRow crash{id,
                        1,
                        3,
                        Side::Candidate,
                        RankOutcome::Crash,
                        "run",
                        "SIGSEGV in kernel",
                        139,
                        11,
                        "2026-07-01T00:00:00.000Z",
                        "2026-07-01T00:00:01.500Z",
                        1500.25,
                        812.5};
    RankResultRow ok{id,           0,  0,  Side::Reference, RankOutcome::Ok, "", "", std::nullopt,
                     std::nullopt, "", "", std::nullopt,    std::nullopt};
    store.write_batch([&] {
        store.add_rank_result(crash);
        store.add_rank_result(ok);
    });
    auto rows = store.rank_results(id);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].trial, 0); // ordered by trial, rank
    EXPECT_EQ(rows[0].side, Side::Reference);
    EXPECT_EQ(rows[0].outcome, RankOutcome::Ok);
    EXPECT_FALSE(rows[0].exit_code || rows[0].signal || rows[0].wall_ms || rows[0].compile_ms);
    EXPECT_TRUE(rows[0].started_at.empty());
    const auto& r = rows[1];
    EXPECT_EQ(r.trial, 1);
    EXPECT_EQ(r.rank, 3);
    EXPECT_EQ(r.outcome, RankOutcome::Crash);
    EXPECT_EQ(r.phase, "run");
    EXPECT_EQ(r.message, "SIGSEGV in kernel");
    EXPECT_EQ(r.exit_code, 139);
    EXPECT_EQ(r.signal, 11);
    EXPECT_EQ(r.ended_at, "2026-07-01T00:00:01.500Z");
    EXPECT_EQ(r.wall_ms, 1500.25);
    EXPECT_EQ(r.compile_ms, 812.5);
    // The same (run, trial, rank, side) twice is an engine bug, not an overwrite.
    std::string message = error_of([&] { store.add_rank_result(crash); });
    EXPECT_NE(message.find("UNIQUE"), std::string::npos) << message;
}

TensorComparison sample_comparison() {
    TensorComparison c;
    c.name = "out.0";
    c.pass = false;
    c.shape_match = true;
    c.ref_shape = c.cand_shape = {2, 3, 4};
    c.ref_dtype = DType::BF16;
    c.cand_dtype = DType::F32;
    c.dtype_match = false;
    c.numel = 24;
    c.mismatch_count = 3;
    c.mismatch_fraction = 0.125;
    c.max_abs_error = 1.5;
    c.max_rel_error = 0.75;
    c.worst_ratio = kInf; // a NaN mismatch
    c.first_mismatch = 5;
    c.worst_mismatch = 17;
    c.max_ulp = 4096;
    c.min_passing_atol = kInf;
    c.ref_summary = {0, 1, 2, -1.0, 3.0, 0.5, false, false};
    c.cand_summary = {2, 0, 22, 0.0, 0.0, std::nan(""), false, true};
    c.error_map = {6, 4, 2, 3, {0.0f, 0.5f, 1.5f, std::numeric_limits<float>::infinity(), -0.0f, 1e-30f}};
    c.message = "output 'out.0': 3 of 24 elements mismatch";
    return c;
}

TEST_F(StoreTest, FromComparisonMapsEveryField) {
    TensorComparison c = sample_comparison();
    TensorResultRow r = from_comparison(c);
    EXPECT_EQ(r.name, "out.0");
    EXPECT_EQ(r.ref_dtype, "bf16");
    EXPECT_EQ(r.cand_dtype, "f32");
    EXPECT_EQ(r.ref_shape, (Shape{2, 3, 4}));
    EXPECT_EQ(r.mismatch_count, 3);
    EXPECT_EQ(r.worst_mismatch, 17);
    EXPECT_EQ(r.max_ulp, 4096u);
    EXPECT_EQ(r.cand_summary.zero_count, 22);
    EXPECT_TRUE(r.cand_summary.constant);
    EXPECT_EQ(r.error_map.ratio.size(), 6u);
    EXPECT_EQ(r.message, c.message);
}

TEST_F(StoreTest, TensorResultsRoundTripWithErrorMap) {
    auto store = Store::open(db_path());
    std::int64_t id = store.begin_run(sample_run());
    TensorResultRow row = from_comparison(sample_comparison());
    row.run_id = id;
    row.trial = 2;
    row.rank = 1;
    TensorResultRow passing;
    passing.run_id = id;
    passing.name = "out.1";
    passing.pass = true;
    passing.ref_dtype = passing.cand_dtype = "i64";
    passing.max_ulp = std::numeric_limits<std::uint64_t>::max(); // saturates
    {
        Store::Transaction transaction(store);
        store.add_tensor_result(row);
        store.add_tensor_result(passing);
        transaction.commit();
    }
    auto rows = store.tensor_results(id);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].name, "out.1");
    EXPECT_TRUE(rows[0].pass);
    EXPECT_EQ(rows[0].max_ulp, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
    EXPECT_TRUE(rows[0].error_map.ratio.empty());
    const auto& r = rows[1];
    EXPECT_EQ(r.trial, 2);
    EXPECT_EQ(r.rank, 1);
    EXPECT_FALSE(r.pass);
    EXPECT_TRUE(r.shape_match);
    EXPECT_FALSE(r.dtype_match);
    EXPECT_EQ(r.cand_shape, (Shape{2, 3, 4}));
    EXPECT_EQ(r.ref_dtype, "bf16");
    EXPECT_EQ(r.numel, 24);
    EXPECT_EQ(r.mismatch_fraction, 0.125);
    EXPECT_EQ(r.max_abs_error, 1.5);
    EXPECT_EQ(r.max_rel_error, 0.75);
    EXPECT_EQ(r.worst_ratio, kInf);
    EXPECT_EQ(r.min_passing_atol, kInf);
    EXPECT_EQ(r.first_mismatch, 5);
    EXPECT_EQ(r.max_ulp, 4096u);
    EXPECT_EQ(r.ref_summary.inf_count, 1);
    EXPECT_EQ(r.ref_summary.min, -1.0);
    EXPECT_EQ(r.ref_summary.mean, 0.5);
    EXPECT_EQ(r.cand_summary.nan_count, 2);
    EXPECT_TRUE(std::isnan(r.cand_summary.mean)); // stored as NULL
    EXPECT_TRUE(r.cand_summary.constant);
    EXPECT_FALSE(r.cand_summary.all_zero);
    EXPECT_EQ(r.message, "output 'out.0': 3 of 24 elements mismatch");
    EXPECT_EQ(r.error_map.source_rows, 6);
    EXPECT_EQ(r.error_map.source_cols, 4);
    EXPECT_EQ(r.error_map.rows, 2);
    EXPECT_EQ(r.error_map.cols, 3);
    ASSERT_EQ(r.error_map.ratio.size(), 6u);
    EXPECT_EQ(r.error_map.ratio[2], 1.5f);
    EXPECT_TRUE(std::isinf(r.error_map.ratio[3]));
    EXPECT_TRUE(std::signbit(r.error_map.ratio[4]));
    EXPECT_EQ(r.error_map.ratio[5], 1e-30f);
    // The BLOB is float32 little-endian: 1.5f is 0x3FC00000, stored 00 00 C0 3F.
    EXPECT_EQ(
        raw_sql(db_path(), "SELECT hex(substr(error_map, 9, 4)) FROM tensor_results WHERE name='out.0'"),
        "0000C03F");
    EXPECT_TRUE(store.tensor_results(id, false)[1].error_map.ratio.empty());

    TensorResultRow bad = row;
    bad.name = "bad";
    bad.error_map.rows = 3;
    std::string message = error_of([&] { store.add_tensor_result(bad); });
    EXPECT_NE(message.find("tensor 'bad'"), std::string::npos) << message;
}

TEST_F(StoreTest, PerfSamplesSummariesArtifactsAndDelete) {
    auto store = Store::open(db_path());
    std::int64_t id = store.begin_run(sample_run());
    std::int64_t other = store.begin_run(sample_run(1));
    std::vector<double> ms{0.5, 0.25, 0.125};
    store.add_perf_samples(id, Side::Candidate, 1, 0, ms);
    store.add_perf_samples(id, Side::Reference, 0, 2, std::vector<double>{9.0}, 100);
    store.add_perf_samples(other, Side::Reference, 0, 0, std::vector<double>{1.0});
    auto samples = store.perf_samples(id);
    ASSERT_EQ(samples.size(), 4u);
    EXPECT_EQ(samples[0].side, Side::Reference);
    EXPECT_EQ(samples[0].block, 2);
    EXPECT_EQ(samples[0].iteration, 100);
    EXPECT_EQ(samples[0].ms, 9.0);
    EXPECT_EQ(samples[3].side, Side::Candidate);
    EXPECT_EQ(samples[3].rank, 1);
    EXPECT_EQ(samples[3].iteration, 2);
    EXPECT_EQ(samples[3].ms, 0.125);

    // 250 samples: two multi-row INSERTs of 100 and 50 single rows; iterations stay contiguous.
    std::vector<double> many(250);
    for (std::size_t i = 0; i < many.size(); ++i)
        many[i] = 0.5 * static_cast<double>(i);
    store.add_perf_samples(other, Side::Candidate, 3, 1, many, 7);
    auto read_many = store.perf_samples(other);
    ASSERT_EQ(read_many.size(), 251u);
    for (std::size_t i = 0; i < many.size(); ++i) {
        const auto& sample = read_many[1 + i]; // after the reference sample
        ASSERT_EQ(sample.side, Side::Candidate);
        ASSERT_EQ(sample.rank, 3);
        ASSERT_EQ(sample.block, 1);
        ASSERT_EQ(sample.iteration, 7 + static_cast<int>(i));
        ASSERT_EQ(sample.ms, 0.5 * static_cast<double>(i));
    }

    store.add_perf_summary({id, Side::Candidate, -1, "median_ms", 0.25});
    store.add_perf_summary({id, Side::Candidate, -1, "median_ms", 0.3}); // replaces
    store.add_perf_summary({id, Side::Reference, 0, "p90_ms", 9.0});
    auto summaries = store.perf_summaries(id);
    ASSERT_EQ(summaries.size(), 2u);
    EXPECT_EQ(summaries[0].statistic, "median_ms");
    EXPECT_EQ(summaries[0].value, 0.3);
    EXPECT_EQ(summaries[1].rank, 0);

    auto log = store.add_artifact({0, id, 0, 3, "log", "/runs/1/trial_0/rank_3.log"});
    store.add_artifact({0, id, std::nullopt, std::nullopt, "trace", "/runs/1/trace.json"});
    auto artifacts = store.artifacts(id);
    ASSERT_EQ(artifacts.size(), 2u);
    EXPECT_EQ(artifacts[0].id, log);
    EXPECT_EQ(artifacts[0].rank, 3);
    EXPECT_EQ(artifacts[0].path, "/runs/1/trial_0/rank_3.log");
    EXPECT_FALSE(artifacts[1].trial);
    EXPECT_EQ(artifacts[1].kind, "trace");

    // A row for a run that does not exist is refused (foreign keys are on).
    EXPECT_THROW(store.add_artifact({0, 424242, 0, 0, "log", "x"}), StoreError);

    store.delete_run(id);
    EXPECT_FALSE(store.get_run(id));
    EXPECT_TRUE(store.perf_samples(id).empty());
    EXPECT_TRUE(store.perf_summaries(id).empty());
    EXPECT_TRUE(store.artifacts(id).empty());
    EXPECT_EQ(store.perf_samples(other).size(), 251u);
    EXPECT_EQ(store.integrity_check(), "ok");
}

TEST_F(StoreTest, BatchRollsBackOnThrowAndJoinsNestedCalls) {
    auto store = Store::open(db_path());
    EXPECT_THROW(store.write_batch([&] {
        store.begin_run(sample_run());
        throw std::runtime_error("engine failed mid-batch");
    }),
                 std::runtime_error);
    EXPECT_EQ(store.count_runs(), 0);
    {
        Store::Transaction outer(store);
        store.begin_run(sample_run());
        {
            Store::Transaction inner(store); // joins
            store.begin_run(sample_run());
        } // the inner one does not roll back the outer
        outer.commit();
    }
    EXPECT_EQ(store.count_runs(), 2);
    {
        Store::Transaction abandoned(store);
        store.begin_run(sample_run());
    }
    EXPECT_EQ(store.count_runs(), 2);
}

} // namespace
} // namespace pkbw::test
