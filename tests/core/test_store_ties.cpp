// Issue 16: a tensor result's tie report survives the store, a store merge, a bundle, and the migration
// from a store written before tie reports existed (schema 5).
#include "pkbw/core/bundle.h"
#include "pkbw/core/compare.h"
#include "pkbw/core/store.h"
#include "pkbw/core/store_merge.h"
#include "store_test_util.h"

#include <sqlite3.h>

namespace fs = std::filesystem;
using namespace pkbw;

namespace {

class StoreTiesTest : public test::StoreTest {
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

    // A real comparison: [4, 2] outputs differing in row 2 only, which the problem named a tie row,
    // beside a leaf without tie rows.
    static std::vector<TensorComparison> comparisons() {
        OutputSet ref, cand;
        Tensor a = Tensor::zeros(DType::F32, {4, 2}), b = Tensor::zeros(DType::F32, {4, 2});
        b.mutable_data_as<float>()[4] = 1.0f;
        b.mutable_data_as<float>()[5] = -1.0f;
        ref.add("output_0", a);
        cand.add("output_0", b);
        ref.add("output_1", Tensor::zeros(DType::F32, {3}));
        cand.add("output_1", Tensor::zeros(DType::F32, {3}));
        const TieRowsByOutput ties = {
            {"output_0", {{0, 2}, "top-2 of the bf16 router softmax: 2nd and 3rd equal"}}};
        return compare_outputs(ref, cand, CompareOptions{}, ties).tensors;
    }

    static std::int64_t record(Store& store) {
        const std::int64_t id = store.begin_run(test::sample_run());
        for (const auto& c : comparisons()) {
            TensorResultRow row = from_comparison(c);
            row.run_id = id;
            row.trial = 0;
            row.rank = 1;
            store.add_tensor_result(row);
        }
        return id;
    }

    static void expect_ties(const Store& store, std::int64_t id) {
        const auto rows = store.tensor_results(id, true);
        ASSERT_EQ(rows.size(), 2u);
        EXPECT_EQ(rows[0].name, "output_0");
        ASSERT_TRUE(rows[0].ties);
        const TieReport& t = *rows[0].ties;
        EXPECT_EQ(t.named.rows, (std::vector<std::int64_t>{0, 2}));
        EXPECT_EQ(t.named.rule, "top-2 of the bf16 router softmax: 2nd and 3rd equal");
        EXPECT_TRUE(t.explained());
        EXPECT_EQ(t.mismatched_elements, 2);
        EXPECT_EQ(t.mismatched_rows_in_tie_rows, 1);
        EXPECT_EQ(tie_report_text(t), "tie-explained: all 2 mismatched elements are in 1 of the 2 tie rows "
                                      "(top-2 of the bf16 router softmax: 2nd and 3rd equal)");
        EXPECT_FALSE(rows[0].pass);
        EXPECT_FALSE(rows[1].ties);
    }
};

} // namespace

TEST_F(StoreTiesTest, RoundTripMergeAndBundle) {
    const fs::path a = dir_ / "a" / "runs.db", target = dir_ / "main" / "runs.db", bundle = dir_ / "r.pkbw";
    std::int64_t id = 0;
    {
        Store store = Store::open(a);
        id = record(store);
        expect_ties(store, id);
        export_bundle(store, {id}, bundle);
    }
    {
        RunRecord earlier = test::sample_run(1);
        earlier.started_at = "2026-06-30T08:00:00.000Z";
        Store::open(target).begin_run(earlier); // the merged run gets another id
    }
    const MergeReport report = merge_stores({a}, target);
    EXPECT_EQ(report.runs, 1);
    {
        Store merged = Store::open_read_only(target);
        EXPECT_EQ(merged.count_runs(), 2);
        expect_ties(merged, 2);
    }
    OpenedBundle opened = OpenedBundle::open(bundle);
    expect_ties(Store::open_read_only(opened.store_path()), id);
}

TEST_F(StoreTiesTest, AStoreFromBeforeTieReportsMigratesWithNone) {
    std::int64_t id = 0;
    {
        Store store = Store::open(db_path());
        id = store.begin_run(test::sample_run());
        TensorResultRow row = from_comparison(comparisons()[1]);
        row.run_id = id;
        store.add_tensor_result(row);
    }
    sql(db_path(), "ALTER TABLE tensor_results DROP COLUMN ties; " + std::string(test::kDropOutputLengths) +
                       "PRAGMA user_version = 5");
    Store store = Store::open(db_path());
    EXPECT_EQ(store.schema_version(), Store::latest_schema_version());
    const auto rows = store.tensor_results(id, false);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_FALSE(rows[0].ties);
}

TEST_F(StoreTiesTest, ADamagedTieReportIsNamed) {
    Store store = Store::open(db_path());
    const std::int64_t id = record(store);
    sql(db_path(), "UPDATE tensor_results SET ties = '{\"rule\": 3}' WHERE name = 'output_0'");
    try {
        store.tensor_results(id, false);
        FAIL() << "no error";
    } catch (const StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("tensor 'output_0' ties: field 'rule' is not a string"),
                  std::string::npos)
            << e.what();
    }
}
