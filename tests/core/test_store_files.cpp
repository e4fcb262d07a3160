// Store files from elsewhere: another program's database, a damaged store, a file with objects pkbw
// never creates, values out of range. Each is refused with a StoreError naming the file, and a file
// that is refused is left byte for byte as it was (fuzz_store checks the same on random files).
#include "pkbw/core/error.h"
#include "store_test_util.h"

#include <fstream>
#include <iterator>
#include <sqlite3.h>

namespace pkbw::test {
namespace {

void raw_exec(const std::filesystem::path& path, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
}

std::string bytes_of(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Opens the file every way the engine and the GUI do; each must throw a StoreError naming the file
// and containing `expected`, and leave the file unchanged.
void expect_refused_untouched(const std::filesystem::path& path, const std::string& expected) {
    const std::string before = bytes_of(path);
    ASSERT_FALSE(before.empty());
    for (int way = 0; way < 3; ++way) {
        try {
            if (way == 0)
                Store::open(path);
            else if (way == 1)
                Store::open_read_only(path, Store::Missing::Create);
            else
                Store::open_read_only(path);
            ADD_FAILURE() << "opened (way " << way << ")";
        } catch (const StoreError& e) {
            const std::string message = e.what();
            EXPECT_NE(message.find(path.string()), std::string::npos) << message;
            EXPECT_NE(message.find(expected), std::string::npos) << message;
        }
        EXPECT_EQ(bytes_of(path), before) << "way " << way << " changed the file";
    }
}

// A store at schema 1 (before traces), in rollback-journal mode, as an older pkbw left it.
void make_schema_1_store(const std::filesystem::path& path) {
    {
        auto store = Store::open(path);
        store.begin_run(sample_run());
    }
    raw_exec(path, "PRAGMA journal_mode = DELETE; DROP TABLE trace_events; DROP TABLE trace_ranks; "
                   "DROP TABLE sweep_pairs; DROP TABLE sweeps; " // schema 3
                   "DROP TABLE agent_attempts; DROP TABLE generation_exchanges; DROP TABLE generations; " // 4
                   "DROP TABLE run_files; DROP TABLE blobs; "                                             // 5
                   "ALTER TABLE tensor_results DROP COLUMN ties; "                                        // 6
                   "ALTER TABLE tensor_results DROP COLUMN length_bound; "                                // 7
                   "ALTER TABLE tensor_results DROP COLUMN ref_length; "
                   "ALTER TABLE tensor_results DROP COLUMN cand_length; "
                   "DROP TABLE run_flags; " // 8
                   "PRAGMA user_version = 1; VACUUM;");
}

// pkbw used to migrate any database with user_version 0: pkbw's tables were created inside another
// program's file (and it was switched to WAL).
TEST_F(StoreTest, RefusesAnotherProgramsDatabaseWithoutWritingIt) {
    std::filesystem::create_directories(dir_);
    const auto path = dir_ / "notes.db";
    raw_exec(path, "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) "
                   "VALUES ('keep me');");
    expect_refused_untouched(path,
                             "not a pkbw run store: schema version 0 (PRAGMA user_version) but 1 tables");

    raw_exec(path, "PRAGMA user_version = 1");
    expect_refused_untouched(path, "not a pkbw run store: schema version 1 but no 'runs' table");
}

TEST_F(StoreTest, RefusesTriggersViewsAndVirtualTables) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"CREATE TRIGGER wipe AFTER INSERT ON artifacts BEGIN DELETE FROM runs; END;", "a trigger 'wipe'"},
        {"CREATE VIEW v AS SELECT id FROM runs;", "a view 'v'"},
        {"CREATE VIRTUAL TABLE search USING fts5(text);", "a table 'search'"},
    };
    for (const auto& [sql, expected] : cases) {
        std::filesystem::remove_all(dir_);
        {
            auto store = Store::open(db_path());
            store.begin_run(sample_run());
        }
        raw_exec(db_path(), "PRAGMA journal_mode = DELETE; " + sql);
        expect_refused_untouched(db_path(), "not a pkbw run store: it has " + expected);
    }
}

TEST_F(StoreTest, DoesNotMigrateADamagedStore) {
    make_schema_1_store(db_path());
    // Zero the b-tree header of the last page (a table or index page; page 1 holds the schema).
    std::string bytes = bytes_of(db_path());
    ASSERT_GE(bytes.size(), 4u * 4096);
    std::fill(bytes.end() - 4096, bytes.end() - 4096 + 16, '\0');
    std::ofstream(db_path(), std::ios::binary | std::ios::trunc) << bytes;
    const std::string before = bytes_of(db_path());
    for (bool create : {false, true}) {
        try {
            if (create)
                Store::open_read_only(db_path(), Store::Missing::Create);
            else
                Store::open(db_path());
            ADD_FAILURE() << "a damaged schema-1 store was opened read-write";
        } catch (const StoreError& e) {
            EXPECT_NE(std::string(e.what()).find(db_path().string()), std::string::npos) << e.what();
        }
        EXPECT_EQ(bytes_of(db_path()), before);
    }
    EXPECT_EQ(bytes_of(db_path()), before);
}

// The switch to WAL used to come before the migrations, so a failing migration still changed the file.
TEST_F(StoreTest, AFailedMigrationLeavesTheFileAsItWas) {
    make_schema_1_store(db_path());
    raw_exec(db_path(), "CREATE TABLE trace_ranks (x)"); // migration 002 creates it: it fails
    const std::string before = bytes_of(db_path());
    try {
        Store::open(db_path());
        ADD_FAILURE() << "migrated";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("migration 002_traces.sql failed"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(bytes_of(db_path()), before);
}

TEST_F(StoreTest, MigratesAnIntactSchema1Store) {
    make_schema_1_store(db_path());
    auto store = Store::open(db_path());
    EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
    EXPECT_EQ(store.count_runs(), 1);
    EXPECT_EQ(store.integrity_check(), "ok");
}

// error_map_rows = error_map_cols = INT_MIN made rows x cols wrap to 2^62 cells in size_t, matched a
// NULL map (0 bytes = 2^64 mod 2^64) and then asked for 2^62 floats: std::length_error, not a StoreError.
TEST_F(StoreTest, ErrorMapSizeOutOfRangeIsAStoreError) {
    std::int64_t id = 0;
    {
        auto store = Store::open(db_path());
        id = store.begin_run(sample_run());
        TensorResultRow row;
        row.run_id = id;
        row.name = "out";
        row.error_map = {2, 2, 1, 2, {0.5f, 2.0f}};
        store.add_tensor_result(row);
    }
    for (const char* update : {"error_map_rows = -2147483648, error_map_cols = -2147483648, error_map = NULL",
                               "error_map_rows = -1", "error_map_cols = 65537"}) {
        raw_exec(db_path(), std::string("UPDATE tensor_results SET ") + update);
        const auto store = Store::open_read_only(db_path());
        for (bool with_maps : {true, false}) {
            try {
                store.tensor_results(id, with_maps);
                ADD_FAILURE() << update;
            } catch (const StoreError& e) {
                EXPECT_NE(std::string(e.what()).find(db_path().string() + ": run " + std::to_string(id) +
                                                     " tensor 'out': error map of"),
                          std::string::npos)
                    << e.what();
            }
        }
        raw_exec(db_path(), "UPDATE tensor_results SET error_map_rows = 1, error_map_cols = 2, "
                            "error_map = X'0000003f00000040'");
        ASSERT_EQ(store.tensor_results(id).at(0).error_map.ratio, (std::vector<float>{0.5f, 2.0f}));
    }
}

// Deleting a run still cascades with triggers disabled on the connection (foreign-key actions are
// not triggers).
TEST_F(StoreTest, DeleteCascadesOnAHardenedConnection) {
    auto store = Store::open(db_path());
    const auto id = store.begin_run(sample_run());
    store.add_perf_samples(id, Side::Candidate, 0, 0, std::vector<double>{1.0, 2.0});
    store.delete_run(id);
    EXPECT_TRUE(store.perf_samples(id).empty());
}

} // namespace
} // namespace pkbw::test
