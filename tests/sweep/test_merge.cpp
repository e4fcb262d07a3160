// pkbw store merge: ids remapped, run folders and artifacts copied, sweeps joined by uuid, duplicates
// and damaged inputs refused with nothing merged.
#include "pkbw/core/error.h"
#include "pkbw/core/store.h"
#include "pkbw/core/store_merge.h"
#include "pkbw/core/sweep_store.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace pkbw;

namespace {

class MergeTest : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<int> counter{0};
        dir_ = fs::temp_directory_path() /
               ("pkbw_merge_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    // A store at `name`/runs.db with `count` runs, each with a folder, a log artifact, a rank result
    // and a perf summary; the runs of `sweep` (when set) are its pairs.
    fs::path make_store(const std::string& name, int count, const std::string& host,
                        SweepRecord* sweep = nullptr, int first_problem = 1) {
        const fs::path db = dir_ / name / "runs.db";
        Store store = Store::open(db);
        std::vector<SweepPair> pairs;
        for (int i = 0; i < count; ++i) {
            RunRecord r;
            r.problem_id = first_problem + i;
            r.problem_stem = std::to_string(first_problem + i) + "_p";
            r.backend = "host";
            r.dtype = "f32";
            r.writer_host = host;
            r.writer_pid = 1000 + i;
            r.solution_path = "/x/solutions_host_f32_none_samples_a/" + r.problem_stem + "_host.cpp";
            r.generation = parse_generation_label(r.solution_path);
            const fs::path run_dir = dir_ / name / "runs" / ("run-" + std::to_string(i));
            fs::create_directories(run_dir);
            std::ofstream(run_dir / "rank_0.log") << name << " run " << i << "\n";
            r.run_dir = run_dir.string();
            const auto id = store.begin_run(r);
            RankResultRow rank;
            rank.run_id = id;
            rank.phase = "run";
            store.add_rank_result(rank);
            store.add_perf_summary({id, Side::Candidate, -1, "speedup", 1.5 + i});
            store.add_artifact({0, id, std::nullopt, 0, "log", (run_dir / "rank_0.log").string()});
            store.finish_run(id, i == 0 ? RunStatus::Mismatch : RunStatus::Pass, i == 0 ? 1 : 0, "done");
            SweepPair p;
            p.generation_label = r.generation.label;
            p.problem_stem = r.problem_stem;
            p.solution_path = r.solution_path;
            p.position = i;
            p.run_id = id;
            p.state = "done";
            pairs.push_back(p);
        }
        if (sweep)
            create_sweep(store, *sweep, pairs);
        return db;
    }

    static std::int64_t run_count(const fs::path& db) { return Store::open_read_only(db).count_runs(); }

    fs::path dir_;
};

TEST_F(MergeTest, RemapsIdsCopiesFoldersAndArtifacts) {
    const auto a = make_store("a", 2, "node-a");
    const auto b = make_store("b", 3, "node-b");
    const auto into = dir_ / "main" / "runs.db";
    make_store("main", 1, "node-main");
    MergeReport report = merge_stores({a, b}, into);
    EXPECT_EQ(report.runs, 5);
    EXPECT_EQ(report.folders, 5);
    Store store = Store::open_read_only(into);
    ASSERT_EQ(store.count_runs(), 6);
    std::set<std::string> hosts;
    for (const auto& run : store.list_runs({}, {RunSortColumn::Id, false})) {
        hosts.insert(run.writer_host);
        // Every run's folder is now beside the target, with its file, and its artifact points there.
        EXPECT_TRUE(run.run_dir.starts_with((dir_ / "main" / "runs").string())) << run.run_dir;
        auto artifacts = store.artifacts(run.id);
        ASSERT_EQ(artifacts.size(), 1u);
        EXPECT_TRUE(artifacts[0].path.starts_with(run.run_dir + "/")) << artifacts[0].path;
        EXPECT_TRUE(fs::is_regular_file(artifacts[0].path)) << artifacts[0].path;
        EXPECT_EQ(store.rank_results(run.id).size(), 1u);
        EXPECT_EQ(store.perf_summaries(run.id).size(), 1u);
    }
    EXPECT_EQ(hosts, (std::set<std::string>{"node-a", "node-b", "node-main"}));
    // The contents came along: b's third run (1.5 + 2 speedup) is somewhere with its own log text.
    int found = 0;
    for (const auto& run : store.list_runs())
        for (const auto& s : store.perf_summaries(run.id))
            if (s.value == 3.5 && run.writer_host == "node-b") {
                std::ifstream log(store.artifacts(run.id)[0].path);
                std::string line;
                std::getline(log, line);
                EXPECT_EQ(line, "b run 2");
                ++found;
            }
    EXPECT_EQ(found, 1);
}

TEST_F(MergeTest, RefusesADuplicateAndMergesNothing) {
    const auto a = make_store("a", 2, "node-a");
    const auto b = make_store("b", 1, "node-b");
    const auto into = dir_ / "main" / "runs.db";
    merge_stores({a}, into);
    ASSERT_EQ(run_count(into), 2);
    try {
        merge_stores({b, a}, into); // b is new, a is already there
        FAIL() << "merging a store twice was accepted";
    } catch (const StoreError& error) {
        EXPECT_NE(std::string(error.what()).find("already in the target"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find(a.string()), std::string::npos) << error.what();
    }
    EXPECT_EQ(run_count(into), 2); // b's run was rolled back with the rest
    std::size_t folders = 0;
    for (const auto& entry : fs::directory_iterator(dir_ / "main" / "runs")) {
        EXPECT_FALSE(entry.path().filename().string().starts_with(".merge-")) << entry.path();
        ++folders;
    }
    EXPECT_EQ(folders, 2u);
}

TEST_F(MergeTest, RefusesADamagedInputBeforeWritingAnything) {
    const auto good = make_store("good", 2, "node-a");
    const auto bad = make_store("bad", 40, "node-b");
    const auto into = dir_ / "main" / "runs.db";
    make_store("main", 1, "node-main");
    // Overwrite the b-tree page header at the start of every page after the first: a damaged file
    // that SQLite still opens (its own header is intact).
    {
        std::error_code ec;
        fs::remove(fs::path(bad.string() + "-wal"), ec);
        std::fstream file(bad, std::ios::in | std::ios::out | std::ios::binary);
        file.seekg(0, std::ios::end);
        const auto size = static_cast<long>(file.tellg());
        ASSERT_GT(size, 8192);
        for (long at = 4096; at < size; at += 4096) {
            file.seekp(at);
            file.write("\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f", 12);
        }
    }
    std::ifstream before_in(into, std::ios::binary);
    const std::string before((std::istreambuf_iterator<char>(before_in)), std::istreambuf_iterator<char>());
    try {
        merge_stores({good, bad}, into);
        FAIL() << "a damaged input was merged";
    } catch (const StoreError& error) {
        const std::string what = error.what();
        EXPECT_NE(what.find(bad.string()), std::string::npos) << what;
        EXPECT_TRUE(what.find("damaged") != std::string::npos || what.find("malformed") != std::string::npos)
            << what;
    }
    std::ifstream after_in(into, std::ios::binary);
    const std::string after((std::istreambuf_iterator<char>(after_in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(before, after) << "the target changed";
    EXPECT_EQ(run_count(into), 1);
}

TEST_F(MergeTest, RefusesAFileThatIsNotAStore) {
    const auto into = dir_ / "main" / "runs.db";
    const auto junk = dir_ / "junk.db";
    std::ofstream(junk) << "this is not SQLite at all, just text long enough to look like something.";
    EXPECT_THROW(merge_stores({junk}, into), StoreError);
    EXPECT_THROW(merge_stores({dir_ / "missing.db"}, into), StoreError);
}

TEST_F(MergeTest, TaskStoresFillTheSweepOfTheSameUuid) {
    // The main store knows the sweep and its four pairs, none judged; two task stores judged two each.
    SweepRecord sweep;
    sweep.uuid = "11111111-2222-4333-8444-555555555555";
    sweep.mode = "eval";
    sweep.world_size = 2;
    const auto into = dir_ / "main" / "runs.db";
    {
        Store store = Store::open(into);
        std::vector<SweepPair> pairs;
        for (int i = 0; i < 4; ++i) {
            SweepPair p;
            p.generation_label = "solutions_host_f32_none_samples_a";
            p.problem_stem = std::to_string(i + 1) + "_p";
            p.position = i;
            pairs.push_back(p);
        }
        create_sweep(store, sweep, pairs);
    }
    const auto t1 = make_store("t1", 2, "node-1", &sweep, 1);
    const auto t2 = make_store("t2", 2, "node-2", &sweep, 3);
    MergeReport report = merge_stores({t1, t2}, into);
    EXPECT_EQ(report.sweeps, 0); // joined the existing one
    EXPECT_EQ(report.pairs, 4);
    Store store = Store::open_read_only(into);
    auto sweeps = list_sweeps(store);
    ASSERT_EQ(sweeps.size(), 1u);
    for (const auto& p : sweep_pairs(store, sweeps[0].id)) {
        ASSERT_TRUE(p.run_id) << p.problem_stem;
        EXPECT_EQ(p.state, "done");
        auto run = store.get_run(*p.run_id);
        ASSERT_TRUE(run);
        EXPECT_EQ(run->problem_stem, p.problem_stem); // linked to the remapped run of the same pair
    }
    // The same task store again is a duplicate.
    EXPECT_THROW(merge_stores({t1}, into), StoreError);
}

} // namespace
