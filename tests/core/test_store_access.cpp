// Readers never write (docs/store.md "Opening"): a read-only open leaves the file byte for byte as it
// was, switches nothing to WAL and creates no -wal or -shm beside a rollback-journal file (a bundle);
// in a folder the process cannot write it opens the file immutable; a missing, empty or older file is
// an error naming it. Writers refuse a damaged file before their first write. `store check` reports
// integrity, schema version and missing files; the runs list filters by problem number and sweep.
#include "pkbw/core/error.h"
#include "pkbw/core/generation_store.h"
#include "pkbw/core/store_check.h"
#include "pkbw/core/sweep_store.h"
#include "store_test_util.h"

#include <fstream>
#include <iterator>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pkbw::test {
namespace {

namespace fs = std::filesystem;

void raw_exec(const fs::path& path, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
}

std::string raw_quick_check(const fs::path& path) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        sqlite3_close(db);
        return "cannot open";
    }
    sqlite3_stmt* s = nullptr;
    std::string text;
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &s, nullptr) == SQLITE_OK) {
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW)
            text += reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        if (rc != SQLITE_DONE)
            text += sqlite3_errmsg(db);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return text;
}

std::string bytes_of(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string error_of(const std::function<void()>& body) {
    try {
        body();
    } catch (const StoreError& e) {
        return e.what();
    }
    return "(no error)";
}

bool companions_exist(const fs::path& path) {
    return fs::exists(path.string() + "-wal") || fs::exists(path.string() + "-shm") ||
           fs::exists(path.string() + "-journal");
}

// A store with one run, closed (checkpointed: no -wal beside it), in WAL or rollback-journal mode.
void make_store(const fs::path& path, bool wal) {
    {
        auto store = Store::open(path);
        RunRecord run = sample_run();
        run.run_dir = (path.parent_path() / "runs" / "r1").string();
        store.begin_run(run);
    }
    if (!wal)
        raw_exec(path, "PRAGMA journal_mode = DELETE");
    ASSERT_FALSE(companions_exist(path));
}

// The header's file format bytes (18, 19): 1 rollback journal, 2 WAL.
std::pair<int, int> format_bytes(const fs::path& path) {
    const std::string b = bytes_of(path);
    return {static_cast<unsigned char>(b.at(18)), static_cast<unsigned char>(b.at(19))};
}

// Schema 1 as an older pkbw left it (test_store_files.cpp makes the same).
void make_schema_1_store(const fs::path& path) {
    {
        auto store = Store::open(path);
        store.begin_run(sample_run());
    }
    raw_exec(path, "PRAGMA journal_mode = DELETE; DROP TABLE trace_events; DROP TABLE trace_ranks; "
                   "DROP TABLE sweep_pairs; DROP TABLE sweeps; DROP TABLE agent_attempts; "
                   "DROP TABLE generation_exchanges; DROP TABLE generations; DROP TABLE run_files; "
                   "DROP TABLE blobs; ALTER TABLE tensor_results DROP COLUMN ties; "
                   "ALTER TABLE tensor_results DROP COLUMN length_bound; "
                   "ALTER TABLE tensor_results DROP COLUMN ref_length; "
                   "ALTER TABLE tensor_results DROP COLUMN cand_length; DROP TABLE run_flags; "
                   "PRAGMA user_version = 1; VACUUM;");
}

// Zeroes the b-tree page header of the last leaf page of a table or index: a damaged file whose
// schema still reads, as a bad sector or a bad copy leaves it.
void damage_a_page(const fs::path& path) {
    std::string bytes = bytes_of(path);
    const std::size_t page = 4096;
    for (std::size_t at = bytes.size() - page; at >= 4 * page; at -= page) {
        const auto kind = static_cast<unsigned char>(bytes[at]);
        if (kind == 0x0d || kind == 0x0a) {
            std::fill(bytes.begin() + static_cast<long>(at), bytes.begin() + static_cast<long>(at + 12),
                      '\0');
            break;
        }
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace

TEST_F(StoreTest, ReaderLeavesABundleLikeFileAsItWas) {
    // pkbw runs --store b.pkbw used to switch a bundle (rollback journal) to WAL and leave -wal and
    // -shm files beside it.
    make_store(db_path(), false);
    const std::string before = bytes_of(db_path());
    ASSERT_EQ(format_bytes(db_path()), std::make_pair(1, 1));
    {
        const Store store = Store::open_read_only(db_path());
        EXPECT_TRUE(store.read_only());
        EXPECT_EQ(store.count_runs(), 1);
        EXPECT_TRUE(list_sweeps(store).empty());      // a side connection, read-only too
        EXPECT_TRUE(list_generations(store).empty()); // and another
        EXPECT_NE(error_of([&] { store.check_before_write(); }).find("read-only"), std::string::npos);
    }
    EXPECT_EQ(bytes_of(db_path()), before);
    EXPECT_EQ(format_bytes(db_path()), std::make_pair(1, 1));
    EXPECT_FALSE(companions_exist(db_path()));
}

TEST_F(StoreTest, MissingEmptyAndOlderFilesAreReadersErrorsNamingThem) {
    std::string message = error_of([&] { Store::open_read_only(db_path()); });
    EXPECT_NE(message.find(db_path().string() + ": no such file"), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(db_path()));

    fs::create_directories(db_path().parent_path());
    std::ofstream(db_path()).flush();
    message = error_of([&] { Store::open_read_only(db_path()); });
    EXPECT_NE(message.find(db_path().string() + ": the file is empty (0 bytes)"), std::string::npos)
        << message;
    EXPECT_EQ(fs::file_size(db_path()), 0u);
    EXPECT_FALSE(companions_exist(db_path()));

    fs::remove(db_path());
    make_schema_1_store(db_path());
    const std::string before = bytes_of(db_path());
    message = error_of([&] { Store::open_read_only(db_path()); });
    EXPECT_NE(message.find("schema version 1 is older"), std::string::npos) << message;
    EXPECT_NE(message.find("pkbw store migrate --store " + db_path().string()), std::string::npos) << message;
    EXPECT_EQ(bytes_of(db_path()), before);
    EXPECT_FALSE(companions_exist(db_path()));
}

// A WAL store in a folder this process cannot write: SQLite cannot create the -shm a WAL reader
// needs, so the file is opened immutable. Run as root (permissions do not bind it), the reading part
// runs in a child that has become user nobody.
TEST_F(StoreTest, ReadOnlyFolderIsReadImmutableAndLeftAsItWas) {
    make_store(db_path(), true);
    ASSERT_EQ(format_bytes(db_path()), std::make_pair(2, 2));
    {
        auto store = Store::open(db_path());
        create_sweep(store, SweepRecord{}, {});
    }
    ASSERT_FALSE(companions_exist(db_path()));
    const fs::path folder = db_path().parent_path();
    const std::string before = bytes_of(db_path());
    ASSERT_EQ(::chmod(db_path().c_str(), 0444), 0);
    ASSERT_EQ(::chmod(folder.c_str(), 0555), 0);
    ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);

    const bool root = ::geteuid() == 0;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        if (root && (::setgid(65534) != 0 || ::setuid(65534) != 0))
            ::_exit(10);
        if (::access(folder.c_str(), W_OK) == 0)
            ::_exit(11); // the folder is writable after all: nothing to test
        try {
            const Store store = Store::open_read_only(db_path());
            if (!store.immutable())
                ::_exit(12);
            if (store.count_runs() != 1 || store.list_runs().size() != 1)
                ::_exit(13);
            if (list_sweeps(store).size() != 1) // the sweeps' own connection, immutable too
                ::_exit(14);
            if (check_store(db_path()).integrity != "ok")
                ::_exit(15);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "child: %s\n", e.what());
            ::_exit(16);
        }
        ::_exit(0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ::chmod(folder.c_str(), 0755);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "10: cannot become nobody, 11: folder writable, 12: not immutable, "
                                         "13: runs, 14: sweeps, 15: check, 16: threw";
    EXPECT_EQ(bytes_of(db_path()), before);
    EXPECT_FALSE(companions_exist(db_path()));
}

TEST_F(StoreTest, AWriteIntoADamagedStoreIsRefusedBeforeAnythingIsWritten) {
    make_store(db_path(), true); // current and in WAL: opening it needs no write
    damage_a_page(db_path());
    ASSERT_NE(raw_quick_check(db_path()), "ok");
    const std::string before = bytes_of(db_path());
    auto store = Store::open(db_path());
    for (int attempt = 0; attempt < 2; ++attempt) { // refused every time, not only the first
        const std::string message = error_of([&] { store.begin_run(sample_run()); });
        EXPECT_NE(message.find("store " + db_path().string() + ": the file is damaged, pkbw writes nothing"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("PRAGMA quick_check"), std::string::npos) << message;
    }
    EXPECT_NE(error_of([&] { store.mark_stale_runs_aborted(); }).find("damaged"), std::string::npos);
    EXPECT_NE(error_of([&] { Store::Transaction transaction(store); }).find("damaged"), std::string::npos);
    EXPECT_NE(error_of([&] { create_sweep(store, SweepRecord{}, {}); }).find("damaged"), std::string::npos);
    EXPECT_EQ(bytes_of(db_path()), before);

    const StoreCheckReport report = check_store(db_path());
    EXPECT_TRUE(report.open_error.empty()) << report.open_error;
    EXPECT_FALSE(report.integrity_ok());
    EXPECT_FALSE(report.ok());
}

TEST_F(StoreTest, AnIntactStoreIsCheckedOnceAndWritten) {
    make_store(db_path(), true);
    auto store = Store::open(db_path());
    store.begin_run(sample_run(1));
    store.begin_run(sample_run(2));
    EXPECT_EQ(store.count_runs(), 3);
}

TEST_F(StoreTest, CheckReportsSchemaAndMissingFiles) {
    fs::create_directories(dir_);
    const fs::path path = dir_ / "runs.db";
    std::int64_t kept = 0, gone = 0;
    {
        auto store = Store::open(path);
        RunRecord a = sample_run();
        a.run_dir = (dir_ / "runs" / "a").string();
        fs::create_directories(a.run_dir);
        std::ofstream(fs::path(a.run_dir) / "rank_0.log") << "log\n";
        kept = store.begin_run(a);
        store.add_artifact({0, kept, std::nullopt, 0, "log", (fs::path(a.run_dir) / "rank_0.log").string()});
        RunRecord b = sample_run();
        b.run_dir = (dir_ / "runs" / "b").string(); // never created
        gone = store.begin_run(b);
        store.add_artifact({0, gone, std::nullopt, 1, "log", (fs::path(b.run_dir) / "rank_1.log").string()});
    }
    StoreCheckReport report = check_store(path);
    EXPECT_EQ(report.integrity, "ok");
    EXPECT_EQ(report.schema_version, Store::latest_schema_version());
    EXPECT_EQ(report.runs, 2);
    EXPECT_EQ(report.files_checked, 4);
    ASSERT_EQ(report.missing.size(), 2u);
    EXPECT_EQ(report.missing[0].run_id, gone);
    EXPECT_EQ(report.missing[0].kind, "log");
    EXPECT_EQ(report.missing[1].kind, "run_dir");
    EXPECT_FALSE(report.ok());
    fs::create_directories(dir_ / "runs" / "b");
    std::ofstream(dir_ / "runs" / "b" / "rank_1.log") << "log\n";
    EXPECT_TRUE(check_store(path).ok());

    fs::remove_all(dir_);
    fs::create_directories(dir_);
    make_schema_1_store(path);
    report = check_store(path);
    EXPECT_EQ(report.integrity, "ok");
    EXPECT_EQ(report.schema_version, 1);
    EXPECT_NE(report.files_note.find("older"), std::string::npos) << report.files_note;
    EXPECT_FALSE(report.ok());

    std::ofstream(dir_ / "empty.db").flush();
    EXPECT_NE(check_store(dir_ / "empty.db").open_error.find("empty"), std::string::npos);
    EXPECT_EQ(check_store(dir_ / "none.db").open_error, "no such file");
    EXPECT_FALSE(fs::exists(dir_ / "none.db"));
}

TEST_F(StoreTest, RunsFilterByProblemNumberAndSweep) {
    auto store = Store::open(db_path());
    const auto a = store.begin_run(sample_run(0)); // problem_id 17
    const auto b = store.begin_run(sample_run(1)); // 18
    SweepPair pair;
    pair.generation_label = "g";
    pair.problem_stem = "17_gemm_allreduce";
    const auto sweep = create_sweep(store, SweepRecord{}, {pair});
    pair.run_id = b;
    pair.state = "done";
    record_sweep_pair(store, sweep, pair);
    RunFilter by_number;
    by_number.problem_id = 17;
    auto runs = store.list_runs(by_number);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].id, a);
    RunFilter by_sweep;
    by_sweep.sweep_id = sweep;
    runs = store.list_runs(by_sweep);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].id, b);
    EXPECT_EQ(store.count_runs(by_sweep), 1);
    by_sweep.sweep_id = sweep + 1;
    EXPECT_EQ(store.count_runs(by_sweep), 0);
}

} // namespace pkbw::test
