// Schema 7: a variable-length output's bound and both lengths round-trip through the store, and a store
// written before schema 7 migrates with NULL (fixed-shape) lengths.
#include "pkbw/core/compare.h"
#include "pkbw/core/error.h"
#include "pkbw/core/store.h"
#include "store_test_util.h"

#include <sqlite3.h>

namespace fs = std::filesystem;
using namespace pkbw;

namespace {

class StoreLengthsTest : public test::StoreTest {
protected:
    static void sql(const fs::path& path, const std::string& statement) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
        char* error = nullptr;
        EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &error), SQLITE_OK)
            << (error ? error : "");
        sqlite3_free(error);
        sqlite3_close(db);
    }

    // A real comparison: output_0 variable (the candidate reported 12 rows, the reference 9, of 16),
    // output_1 fixed.
    static std::int64_t record(Store& store) {
        OutputSet ref, cand;
        ref.add("output_0", Tensor::zeros(DType::I64, {9}), OutputLength{16, 9});
        cand.add("output_0", Tensor::zeros(DType::I64, {12}), OutputLength{16, 12});
        ref.add("output_1", Tensor::zeros(DType::F32, {3}));
        cand.add("output_1", Tensor::zeros(DType::F32, {3}));
        const std::int64_t id = store.begin_run(test::sample_run());
        for (const auto& c : compare_outputs(ref, cand, CompareOptions{}).tensors) {
            TensorResultRow row = from_comparison(c);
            row.run_id = id;
            store.add_tensor_result(row);
        }
        return id;
    }
};

TEST_F(StoreLengthsTest, LengthsRoundTrip) {
    Store store = Store::open(db_path());
    const std::int64_t id = record(store);
    const auto rows = store.tensor_results(id, true);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].name, "output_0");
    EXPECT_FALSE(rows[0].pass);
    EXPECT_EQ(rows[0].length_bound, 16);
    EXPECT_EQ(rows[0].ref_length, 9);
    EXPECT_EQ(rows[0].cand_length, 12);
    EXPECT_EQ(rows[0].message, "output_0: length 12, the reference's 9");
    EXPECT_EQ(rows[1].name, "output_1");
    EXPECT_TRUE(rows[1].pass);
    EXPECT_FALSE(rows[1].length_bound);
    EXPECT_FALSE(rows[1].ref_length);
    EXPECT_FALSE(rows[1].cand_length);
}

TEST_F(StoreLengthsTest, AStoreFromBeforeLengthsMigratesWithNone) {
    std::int64_t id = 0;
    {
        Store store = Store::open(db_path());
        id = store.begin_run(test::sample_run());
        TensorResultRow row;
        row.run_id = id;
        row.name = "output_0";
        row.pass = true;
        row.ref_dtype = row.cand_dtype = "f32";
        store.add_tensor_result(row);
    }
    // What a schema 6 store looks like: no length columns, user_version 6.
    sql(db_path(), std::string(test::kDropOutputLengths) + "PRAGMA user_version = 6");
    // Reading never writes: a read-only open refuses the old schema instead of migrating it.
    EXPECT_THROW(Store::open_read_only(db_path()), StoreError);
    Store store = Store::open(db_path());
    EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
    const auto rows = store.tensor_results(id, false);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(rows[0].pass);
    EXPECT_FALSE(rows[0].length_bound);
    EXPECT_FALSE(rows[0].cand_length);
    // New rows after the migration keep their lengths.
    OutputSet ref, cand;
    ref.add("output_0", Tensor::zeros(DType::I32, {2}), OutputLength{4, 2});
    cand.add("output_0", Tensor::zeros(DType::I32, {2}), OutputLength{4, 2});
    TensorResultRow row = from_comparison(compare_outputs(ref, cand, CompareOptions{}).tensors[0]);
    row.run_id = id;
    row.trial = 1;
    store.add_tensor_result(row);
    const auto after = store.tensor_results(id, false);
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[1].ref_length, 2);
    EXPECT_EQ(after[1].length_bound, 4);
}

// Schema 8: a run's flags with the engine's severity, in the run's order; replaced whole; a severity
// outside the three is refused naming the flag; a store from before schema 8 migrates with none.
TEST_F(StoreLengthsTest, RunFlagsKeepTheirSeverityAndOrder) {
    std::int64_t id = 0;
    {
        Store store = Store::open(db_path());
        id = store.begin_run(test::sample_run());
    }
    sql(db_path(), "DROP TABLE run_flags; PRAGMA user_version = 7");
    Store store = Store::open(db_path());
    EXPECT_EQ(store.schema_version(), 8);
    EXPECT_TRUE(store.run_flags(id).empty());
    store.set_run_flags(
        id, {{id, 5, "info", "calls cuBLAS (cublasGemmEx)", "cuBLAS in the candidate's own code"},
             {id, 0, "suspect", "starts processes (fork)", "called from the candidate's own code"},
             {id, 0, "warning", "sandbox: no Landlock", ""}});
    auto flags = store.run_flags(id);
    ASSERT_EQ(flags.size(), 3u);
    EXPECT_EQ(flags[0].seq, 0);
    EXPECT_EQ(flags[0].severity, "info");
    EXPECT_EQ(flags[1].severity, "suspect");
    EXPECT_EQ(flags[1].reason, "called from the candidate's own code");
    EXPECT_EQ(flags[2].severity, "warning");
    EXPECT_EQ(flags[2].text, "sandbox: no Landlock");
    store.set_run_flags(id, {{id, 0, "info", "calls cuBLAS", ""}});
    EXPECT_EQ(store.run_flags(id).size(), 1u);
    try {
        store.set_run_flags(id, {{id, 0, "fatal", "made up", ""}});
        FAIL() << "a severity outside info, suspect, warning was stored";
    } catch (const StoreError& error) {
        EXPECT_NE(std::string(error.what()).find("flag 'made up' has severity 'fatal'"), std::string::npos)
            << error.what();
    }
    EXPECT_EQ(store.run_flags(id).size(), 1u); // the refused call wrote nothing
}

} // namespace
