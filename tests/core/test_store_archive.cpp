// Issue 19: the code and the artifacts that ran travel with the run. Archived files (checked on
// read), store-relative run folders (a moved store still finds its artifacts), and bundles opened
// with nothing of the original machine present.
#include "pkbw/core/bundle.h"
#include "pkbw/core/error.h"
#include "pkbw/core/run_archive.h"
#include "pkbw/core/sha256.h"
#include "pkbw/core/store.h"
#include "store_test_util.h"

#include <fstream>
#include <sqlite3.h>

namespace fs = std::filesystem;
using namespace pkbw;

namespace {

class StoreArchiveTest : public test::StoreTest {
protected:
    static void write(const fs::path& path, const std::string& text) {
        fs::create_directories(path.parent_path());
        std::ofstream(path, std::ios::binary) << text;
    }
    static std::string read(const fs::path& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    // A run recorded the way the engine records one: its folder under <store>/runs, an outputs file
    // and a rank log there, the candidate and the reference archived, a compile diagnostic.
    std::int64_t record_run(Store& store, const fs::path& store_dir) {
        const fs::path run_dir = store_dir / "runs" / "20261201-120000-2_allgather-abcd1234";
        write(run_dir / "outputs" / "trial0_rank1_candidate.safetensors", "tensor bytes");
        write(run_dir / "rank_1.log", "rank 1 says hello\n");
        write(dir_ / "checkout" / "cand.cu", "__global__ void k() {}\n");
        write(dir_ / "checkout" / "reference.cu", "// the reference\n");
        RunRecord run = test::sample_run();
        run.run_dir = run_dir.string();
        run.solution_path = (dir_ / "checkout" / "cand.cu").string();
        run.solution_sha256 = sha256_file_hex(run.solution_path);
        const auto id = store.begin_run(run);
        store.add_artifact({0, id, 0, 1, "outputs_candidate",
                            (run_dir / "outputs" / "trial0_rank1_candidate.safetensors").string()});
        store.add_artifact({0, id, std::nullopt, 1, "log", (run_dir / "rank_1.log").string()});
        EXPECT_FALSE(
            archive_file(store, id, file_role::kCandidateSource, dir_ / "checkout" / "cand.cu").empty());
        EXPECT_FALSE(
            archive_file(store, id, file_role::kReferenceSource, dir_ / "checkout" / "reference.cu").empty());
        archive_file(store, id, file_role::kRankLog, run_dir / "rank_1.log", std::nullopt, 1);
        store.archive_run_file(id, file_role::kDiagnostics, "compile_candidate.json",
                               diagnostics_json({{"candidate", "cand.cu", 3, 7, "error", "expected ';'"},
                                                 {"candidate", "cand.cu", 9, 1, "error", "unknown type"}}));
        return id;
    }
};

TEST_F(StoreArchiveTest, SourcesAreArchivedByHashAndReadBackChecked) {
    Store store = Store::open(db_path());
    const auto id = record_run(store, db_path().parent_path());
    // The file changes after the run: the archive still holds what ran.
    write(dir_ / "checkout" / "cand.cu", "edited later\n");
    const auto sources = run_sources(store, id);
    ASSERT_EQ(sources.size(), 2u);
    EXPECT_EQ(sources[0].role, file_role::kCandidateSource);
    EXPECT_EQ(sources[0].text, "__global__ void k() {}\n");
    EXPECT_EQ(sources[0].sha256, sha256_hex("__global__ void k() {}\n"));
    EXPECT_TRUE(sources[0].intact);
    EXPECT_EQ(sources[0].origin, "archived");
    EXPECT_EQ(sources[1].role, file_role::kReferenceSource);
    EXPECT_EQ(sources[1].text, "// the reference\n");
    const auto diagnostics = run_diagnostics(store, id);
    ASSERT_EQ(diagnostics.size(), 2u); // every one, not only the first
    EXPECT_EQ(diagnostics[1].line, 9);
    EXPECT_EQ(diagnostics[1].message, "unknown type");
    const auto logs = run_logs(store, id);
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_EQ(logs[0].name, "rank_1.log");
    EXPECT_EQ(logs[0].rank, 1);
    EXPECT_EQ(logs[0].text, "rank 1 says hello\n");
}

TEST_F(StoreArchiveTest, DamagedBlobIsDetected) {
    std::int64_t id = 0;
    {
        Store store = Store::open(db_path());
        id = record_run(store, db_path().parent_path());
    }
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(db_path().c_str(), &db), SQLITE_OK);
        const std::string sql =
            "UPDATE blobs SET data = CAST('__global__ void evil() {}' AS BLOB) WHERE sha256 = '" +
            sha256_hex("__global__ void k() {}\n") + "'";
        ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
        ASSERT_EQ(sqlite3_changes(db), 1);
        sqlite3_close(db);
    }
    Store store = Store::open_read_only(db_path());
    const auto sources = run_sources(store, id);
    ASSERT_EQ(sources.size(), 2u);
    EXPECT_FALSE(sources[0].intact);
    EXPECT_NE(sources[0].problem.find("is damaged"), std::string::npos) << sources[0].problem;
    EXPECT_NE(sources[0].problem.find(db_path().string()), std::string::npos);
    EXPECT_TRUE(sources[1].intact);
}

TEST_F(StoreArchiveTest, RunFoldersAreRecordedRelativeToTheStore) {
    std::int64_t id = 0;
    {
        Store store = Store::open(db_path());
        id = record_run(store, db_path().parent_path());
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(db_path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "SELECT run_dir FROM runs", -1, &s, nullptr);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 0))),
              "runs/20261201-120000-2_allgather-abcd1234");
    sqlite3_finalize(s);
    sqlite3_close(db);
    (void)id;
}

TEST_F(StoreArchiveTest, MovedStoreFindsItsArtifacts) {
    const fs::path original = dir_ / "machine_a";
    const fs::path moved = dir_ / "machine_b" / "copied";
    std::int64_t id = 0;
    {
        Store store = Store::open(original / "runs.db");
        id = record_run(store, original);
        // Given as an absolute path: recorded relative, like the others.
        store.add_artifact(
            {0, id, 0, 0, "outputs_reference",
             (original / "runs" / "20261201-120000-2_allgather-abcd1234" / "rank_1.log").string()});
    }
    fs::create_directories(moved.parent_path());
    fs::rename(original, moved);
    Store store = Store::open_read_only(moved / "runs.db");
    const auto run = store.get_run(id);
    ASSERT_TRUE(run);
    EXPECT_EQ(fs::path(run->run_dir), moved / "runs" / "20261201-120000-2_allgather-abcd1234");
    const auto artifacts = store.artifacts(id);
    ASSERT_EQ(artifacts.size(), 3u);
    for (const auto& artifact : artifacts) {
        EXPECT_TRUE(fs::exists(artifact.path)) << artifact.kind << " " << artifact.path;
        EXPECT_EQ(fs::path(artifact.path).string().rfind(moved.string(), 0), 0u) << artifact.path;
    }
    EXPECT_EQ(read(artifacts[0].path), "tensor bytes");
}

TEST_F(StoreArchiveTest, OlderAbsoluteRunDirIsFoundAfterAMove) {
    const fs::path original = dir_ / "old";
    const fs::path moved = dir_ / "new";
    std::int64_t id = 0;
    {
        Store store = Store::open(original / "runs.db");
        RunRecord run = test::sample_run();
        run.run_dir = (original / "runs" / "r1").string();
        write(original / "runs" / "r1" / "x.log", "x");
        id = store.begin_run(run);
        store.add_artifact({0, id, std::nullopt, 0, "log", (original / "runs" / "r1" / "x.log").string()});
    }
    // Rewrite the recorded paths to absolute ones, as schema 2 stored them.
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open((original / "runs.db").c_str(), &db), SQLITE_OK);
        const std::string dir = (original / "runs" / "r1").string();
        const std::string sql =
            "UPDATE runs SET run_dir = '" + dir + "'; UPDATE artifacts SET path = '" + dir + "/x.log'";
        ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
    }
    fs::rename(original, moved);
    Store store = Store::open_read_only(moved / "runs.db");
    EXPECT_EQ(fs::path(store.get_run(id)->run_dir), moved / "runs" / "r1");
    EXPECT_EQ(fs::path(store.artifacts(id).at(0).path), moved / "runs" / "r1" / "x.log");
}

TEST_F(StoreArchiveTest, BundleOpensWithNoCheckoutPresent) {
    const fs::path machine = dir_ / "gpu_machine";
    const fs::path bundle = dir_ / "laptop" / "review.pkbw";
    std::int64_t id = 0, other = 0;
    {
        Store store = Store::open(machine / "runs.db");
        id = record_run(store, machine);
        other = store.begin_run(test::sample_run(1));
        store.add_perf_samples(id, Side::Candidate, 0, 0, std::vector<double>{1.0, 2.0, 3.0});
        const BundleReport report = export_bundle(store, {id}, bundle);
        EXPECT_EQ(report.runs, std::vector<std::int64_t>{id});
        EXPECT_EQ(report.files, 2u);
        EXPECT_TRUE(report.missing.empty());
        EXPECT_THROW(export_bundle(store, {id}, bundle), StoreError); // never overwritten
        EXPECT_THROW(export_bundle(store, {9999}, dir_ / "x.pkbw"), StoreError);
    }
    // Nothing of the GPU machine is left: no checkout, no store, no runs/ folder.
    fs::remove_all(machine);
    fs::remove_all(dir_ / "checkout");
    ASSERT_TRUE(is_bundle(bundle));
    EXPECT_FALSE(fs::exists(bundle.string() + "-wal"));
    std::string folder;
    {
        OpenedBundle opened = OpenedBundle::open(bundle);
        folder = opened.folder().string();
        EXPECT_TRUE(opened.problems().empty());
        Store store = Store::open_read_only(opened.store_path());
        EXPECT_EQ(store.count_runs(), 1);
        EXPECT_FALSE(store.get_run(other));
        EXPECT_EQ(store.perf_samples(id).size(), 3u);
        const auto artifacts = store.artifacts(id);
        ASSERT_EQ(artifacts.size(), 2u);
        EXPECT_EQ(read(artifacts[0].path), "tensor bytes");
        EXPECT_EQ(read(artifacts[1].path), "rank 1 says hello\n");
        const auto sources = run_sources(store, id);
        ASSERT_EQ(sources.size(), 2u);
        EXPECT_EQ(sources[0].text, "__global__ void k() {}\n");
        EXPECT_TRUE(sources[0].intact);
        EXPECT_EQ(run_diagnostics(store, id).size(), 2u);
    }
    EXPECT_FALSE(fs::exists(folder)); // the temporary folder goes with the object
}

TEST_F(StoreArchiveTest, BundleNamesAFileThatIsGoneAndKeepsItsPath) {
    // The rank log was deleted after the run: the bundle still holds the outputs, names the log as
    // missing, and its artifact row is not pointed into the bundle (there is nothing there to point at).
    const fs::path machine = dir_ / "gpu_machine";
    const fs::path bundle = dir_ / "partial.pkbw";
    std::int64_t id = 0;
    std::string log_path;
    {
        Store store = Store::open(machine / "runs.db");
        id = record_run(store, machine);
        log_path = store.artifacts(id).at(1).path;
        fs::remove(log_path);
        const BundleReport report = export_bundle(store, {id, id}, bundle);
        EXPECT_EQ(report.runs, std::vector<std::int64_t>{id}); // each run once
        EXPECT_EQ(report.files, 1u);
        ASSERT_EQ(report.missing.size(), 1u);
        EXPECT_EQ(report.missing[0], "run " + std::to_string(id) + ": log " + log_path + " (no such file)");
    }
    OpenedBundle opened = OpenedBundle::open(bundle);
    Store store = Store::open_read_only(opened.store_path());
    const auto artifacts = store.artifacts(id);
    ASSERT_EQ(artifacts.size(), 2u);
    EXPECT_EQ(read(artifacts[0].path), "tensor bytes");
    // Not renamed into the bundle's runs/run-<id>/ (where nothing is): the reader finds no file there.
    EXPECT_EQ(artifacts[1].path.find("run-" + std::to_string(id)), std::string::npos) << artifacts[1].path;
    EXPECT_EQ(fs::path(artifacts[1].path).filename(), "rank_1.log");
    EXPECT_FALSE(fs::exists(artifacts[1].path));
}

TEST_F(StoreArchiveTest, BundleRefusesNamesThatLeaveItsFolder) {
    const fs::path bundle = dir_ / "evil.pkbw";
    {
        Store store = Store::open(dir_ / "src" / "runs.db");
        const auto id = record_run(store, dir_ / "src");
        export_bundle(store, {id}, bundle);
    }
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(bundle.c_str(), &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(db,
                               "UPDATE run_files SET name = '../../escaped' WHERE role = 'artifact' AND name "
                               "LIKE '%rank_1.log'",
                               nullptr, nullptr, nullptr),
                  SQLITE_OK);
        sqlite3_close(db);
    }
    EXPECT_THROW(OpenedBundle::open(bundle, dir_ / "out"), StoreError);
    EXPECT_FALSE(fs::exists(dir_ / "escaped"));
    EXPECT_FALSE(is_bundle(dir_ / "src" / "runs.db")); // a plain store is not a bundle
    EXPECT_THROW(OpenedBundle::open(dir_ / "src" / "runs.db"), StoreError);
}

TEST_F(StoreArchiveTest, DeletingARunDropsBlobsNoOtherRunUses) {
    Store store = Store::open(db_path());
    const auto a = store.begin_run(test::sample_run());
    const auto b = store.begin_run(test::sample_run(1));
    store.archive_run_file(a, file_role::kCandidateSource, "x.cu", "shared");
    store.archive_run_file(b, file_role::kCandidateSource, "x.cu", "shared");
    store.archive_run_file(a, file_role::kRankLog, "rank_0.log", "only a");
    store.delete_run(a);
    EXPECT_TRUE(store.read_blob(sha256_hex("shared")).intact);
    EXPECT_FALSE(store.read_blob(sha256_hex("only a")).found);
}

} // namespace
