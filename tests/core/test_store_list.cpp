// Store: run lists (filter, sort, page), readers beside a long write, stale-run recovery, and timings
// printed for the report (no timing assertions).
#include "store_test_util.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <future>
#include <sys/wait.h>
#include <thread>

// Filters are written with designated initializers; the fields left out are meant to stay unset.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace pkbw::test {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Run i: problem p{i%5}, generation g{i%3}, backend cuda/host alternating, status pass unless
// i%7==0 (mismatch), started i minutes after 2026-07-01T00:00 (so dates span several hours).
RunRecord list_run(int i) {
    RunRecord r;
    r.problem_stem = "p" + std::to_string(i % 5);
    r.generation.label = "g" + std::to_string(i % 3);
    r.backend = i % 2 ? "host" : "cuda";
    r.dtype = "bf16";
    r.world_size = 1 + i % 8;
    r.status = i % 7 == 0 ? RunStatus::Mismatch : RunStatus::Pass;
    r.summary = i == 123 ? "needle_in 50% of ranks" : "";
    char started[32];
    std::snprintf(started, sizeof started, "2026-07-01T%02d:%02d:00.000Z", i / 60, i % 60);
    r.started_at = started;
    return r;
}

class StoreListTest : public StoreTest {
protected:
    void SetUp() override {
        StoreTest::SetUp();
        store_ = std::make_unique<Store>(Store::open(db_path()));
        store_->write_batch([&] {
            for (int i = 0; i < kRuns; ++i)
                ids_.push_back(store_->begin_run(list_run(i)));
        });
    }
    void TearDown() override {
        store_.reset();
        StoreTest::TearDown();
    }
    static constexpr int kRuns = 300;
    std::unique_ptr<Store> store_;
    std::vector<std::int64_t> ids_;
};

TEST_F(StoreListTest, CountsWithFilters) {
    auto& s = *store_;
    EXPECT_EQ(s.count_runs(), 300);
    EXPECT_EQ(s.count_runs({.problem_stem = "p2"}), 60);
    EXPECT_EQ(s.count_runs({.generation_label = "g1"}), 100);
    EXPECT_EQ(s.count_runs({.backend = "host"}), 150);
    EXPECT_EQ(s.count_runs({.status = RunStatus::Mismatch}), 43); // 0, 7, ..., 294
    // p0 and g0: i divisible by 15 -> 20; of those mismatching: divisible by 105 -> 0, 105, 210.
    EXPECT_EQ(s.count_runs({.problem_stem = "p0", .generation_label = "g0", .status = RunStatus::Mismatch}),
              3);
    // 01:00 <= started < 02:00: runs 60..119. A date prefix works as a lower bound.
    EXPECT_EQ(s.count_runs({.started_from = "2026-07-01T01:00", .started_to = "2026-07-01T02:00"}), 60);
    EXPECT_EQ(s.count_runs({.started_from = "2026-07-01"}), 300);
    EXPECT_EQ(s.count_runs({.started_to = "2026-07-01"}), 0);
    // Text: substring, case-insensitive, LIKE wildcards taken literally.
    EXPECT_EQ(s.count_runs({.text = "NEEDLE"}), 1);
    EXPECT_EQ(s.count_runs({.text = "50%"}), 1);
    EXPECT_EQ(s.count_runs({.text = "e_i"}), 1); // '_' is not "any character"
    EXPECT_EQ(s.count_runs({.text = "p3"}), 60);
    EXPECT_EQ(s.count_runs({.problem_stem = "p3", .text = "needle"}), 1); // run 123 is p3
    EXPECT_EQ(s.count_runs({.problem_stem = "nope"}), 0);
}

TEST_F(StoreListTest, SortsAndPages) {
    auto& s = *store_;
    auto first = s.list_runs({}, {}, 10, 0); // newest first by default
    ASSERT_EQ(first.size(), 10u);
    EXPECT_EQ(first[0].id, ids_[299]);
    EXPECT_EQ(first[9].id, ids_[290]);
    auto oldest = s.list_runs({}, {RunSortColumn::StartedAt, false}, 1, 0);
    EXPECT_EQ(oldest.at(0).id, ids_[0]);

    // Pages of 37 concatenate to the whole sorted list, no run twice, none missing.
    RunFilter cuda{.backend = "cuda"};
    std::vector<std::int64_t> paged;
    for (int offset = 0;; offset += 37) {
        auto page = s.list_runs(cuda, {RunSortColumn::Problem, false}, 37, offset);
        for (const auto& run : page)
            paged.push_back(run.id);
        if (page.size() < 37)
            break;
    }
    ASSERT_EQ(paged.size(), 150u);
    auto all = s.list_runs(cuda, {RunSortColumn::Problem, false}, 1000, 0);
    for (std::size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(all[i].id, paged[i]);
        EXPECT_EQ(all[i].backend, "cuda");
        if (i > 0) { // by problem, ties by id ascending
            EXPECT_LE(all[i - 1].problem_stem, all[i].problem_stem);
            if (all[i - 1].problem_stem == all[i].problem_stem) {
                EXPECT_LT(all[i - 1].id, all[i].id);
            }
        }
    }
    EXPECT_EQ(all.front().problem_stem, "p0");
    EXPECT_EQ(all.back().problem_stem, "p4");

    auto by_size = s.list_runs({}, {RunSortColumn::WorldSize, true}, 5, 0);
    for (const auto& run : by_size)
        EXPECT_EQ(run.world_size, 8);
    EXPECT_TRUE(s.list_runs({}, {}, 10, 300).empty());
    EXPECT_EQ(s.distinct_values(RunField::Generation), (std::vector<std::string>{"g0", "g1", "g2"}));
    EXPECT_EQ(s.distinct_values(RunField::Status), (std::vector<std::string>{"mismatch", "pass"}));
}

// The engine writes while the GUI reads: with WAL the reader's list completes while the writer's
// transaction is still open (no SQLITE_BUSY, no wait for the commit) and sees only committed runs.
TEST_F(StoreListTest, ReaderIsNotBlockedByAnOpenWriteTransaction) {
    std::promise<void> writing, read_done;
    auto read_done_future = read_done.get_future();
    std::atomic<bool> reader_finished_first{false};
    std::int64_t run_id = ids_[0];
    std::thread writer([&] {
        auto store = Store::open(db_path());
        Store::Transaction transaction(store);
        store.begin_run(list_run(1000)); // uncommitted
        std::vector<double> block(1000, 0.5);
        store.add_perf_samples(run_id, Side::Candidate, 0, 0, block);
        writing.set_value();
        // Keep inserting slowly until the reader has finished (at most 10 s).
        for (int b = 1; b < 1000; ++b) {
            store.add_perf_samples(run_id, Side::Candidate, 0, b, block);
            if (read_done_future.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready) {
                reader_finished_first = true;
                break;
            }
        }
        transaction.commit();
    });
    writing.get_future().wait();
    auto start = Clock::now();
    auto reader = Store::open_read_only(db_path());
    auto page = reader.list_runs({}, {}, 50, 0);
    std::int64_t count = reader.count_runs();
    std::size_t samples = reader.perf_samples(run_id).size();
    double elapsed = ms_since(start);
    read_done.set_value();
    writer.join();
    EXPECT_TRUE(reader_finished_first) << "the writer committed before the reader finished";
    EXPECT_EQ(page.size(), 50u);
    EXPECT_EQ(count, kRuns);  // the uncommitted run is invisible
    EXPECT_EQ(samples, 0u);   // so are the uncommitted samples
    EXPECT_LT(elapsed, 5000); // far below busy_timeout (10 s): it did not wait for the lock
    std::printf("[ reader ] open + list + count beside an open write transaction: %.2f ms\n", elapsed);
    EXPECT_EQ(reader.count_runs(), kRuns + 1); // committed now
    EXPECT_EQ(reader.integrity_check(), "ok");
}

std::int64_t dead_pid() {
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    int status = 0;
    waitpid(child, &status, 0);
    return child;
}

TEST_F(StoreTest, MarkStaleRunsAbortedOnlyForGoneWriters) {
    auto store = Store::open(db_path());
    RunRecord live = sample_run();
    live.status = RunStatus::Running;
    live.writer_pid = 0; // this process
    live.writer_host.clear();
    live.summary.clear();
    std::int64_t live_id = store.begin_run(live);
    std::string host = store.get_run(live_id)->writer_host;

    RunRecord dead = live;
    dead.writer_pid = dead_pid();
    dead.writer_host = host;
    dead.writer_start_ticks.reset();
    std::int64_t dead_id = store.begin_run(dead);

    RunRecord recycled = dead; // our pid, but another process start time: the pid was reused
    recycled.writer_pid = ::getpid();
    recycled.writer_start_ticks = 1;
    recycled.summary = "trial 2 of 5";
    std::int64_t recycled_id = store.begin_run(recycled);

    RunRecord remote = dead; // another host: cannot be checked from here
    remote.writer_host = "some-other-host";
    std::int64_t remote_id = store.begin_run(remote);

    RunRecord finished = dead; // finished runs are never touched
    finished.status = RunStatus::Pass;
    std::int64_t finished_id = store.begin_run(finished);

    EXPECT_EQ(store.mark_stale_runs_aborted(), 2);
    EXPECT_EQ(store.get_run(live_id)->status, RunStatus::Running);
    EXPECT_EQ(store.get_run(remote_id)->status, RunStatus::Running);
    EXPECT_EQ(store.get_run(finished_id)->status, RunStatus::Pass);
    auto d = store.get_run(dead_id);
    EXPECT_EQ(d->status, RunStatus::Aborted);
    EXPECT_FALSE(d->ended_at.empty());
    EXPECT_NE(d->summary.find("writer process " + std::to_string(dead.writer_pid)), std::string::npos)
        << d->summary;
    auto r = store.get_run(recycled_id);
    EXPECT_EQ(r->status, RunStatus::Aborted);
    EXPECT_EQ(r->summary.rfind("trial 2 of 5; aborted", 0), 0u) << r->summary; // keeps what was there
    EXPECT_EQ(store.mark_stale_runs_aborted(), 0);
}

TEST_F(StoreTest, TimingPerfSamplesAndTenThousandRuns) {
    auto store = Store::open(db_path());
    std::int64_t id = store.begin_run(sample_run());
    std::vector<double> samples(100000);
    for (std::size_t i = 0; i < samples.size(); ++i)
        samples[i] = 0.001 * static_cast<double>(i);
    auto start = Clock::now();
    std::clock_t cpu_start = std::clock();
    store.add_perf_samples(id, Side::Candidate, 0, 0, samples);
    double insert_ms = ms_since(start);
    double insert_cpu_ms = 1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    start = Clock::now();
    auto read = store.perf_samples(id);
    double read_ms = ms_since(start);
    ASSERT_EQ(read.size(), samples.size());
    EXPECT_EQ(read[99999].ms, samples[99999]);

    start = Clock::now();
    cpu_start = std::clock();
    store.write_batch([&] {
        for (int i = 0; i < 10000; ++i) {
            RunRecord run = sample_run(i);
            run.problem_stem = "p" + std::to_string(i % 87);
            char started[32];
            std::snprintf(started, sizeof started, "2026-%02d-%02dT%02d:%02d:00.000Z", 1 + i / 1440 % 12,
                          1 + i % 28, i / 60 % 24, i % 60);
            run.started_at = started;
            store.begin_run(run);
        }
    });
    double create_ms = ms_since(start);
    double create_cpu_ms = 1000.0 * static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    start = Clock::now();
    auto page = store.list_runs({}, {RunSortColumn::StartedAt, true}, 100, 0);
    double page_ms = ms_since(start);
    start = Clock::now();
    auto filtered = store.list_runs({.problem_stem = "p17"}, {RunSortColumn::StartedAt, true}, 100, 0);
    std::int64_t filtered_count = store.count_runs({.problem_stem = "p17"});
    double filtered_ms = ms_since(start);
    start = Clock::now();
    auto texted = store.list_runs({.text = "p17"}, {RunSortColumn::StartedAt, true}, 100, 0);
    double text_ms = ms_since(start);
    EXPECT_EQ(page.size(), 100u);
    EXPECT_GE(page[0].started_at, page[99].started_at);
    EXPECT_EQ(filtered_count, 115); // i % 87 == 17 for i < 10000: 17, 104, ..., 9992
    EXPECT_EQ(filtered.size(), 100u);
    EXPECT_EQ(texted.size(), 100u);
    std::printf("[ timing ] 100k perf samples: insert %.1f ms (%.1f ms CPU), read %.1f ms\n", insert_ms,
                insert_cpu_ms, read_ms);
    std::printf("[ timing ] 10k runs: create %.1f ms (%.1f ms CPU, one transaction); page 1 by date %.2f ms; "
                "problem filter page + count %.2f ms; text filter page %.2f ms\n",
                create_ms, create_cpu_ms, page_ms, filtered_ms, text_ms);
    std::printf("[ timing ] file size %.1f MiB\n",
                static_cast<double>(std::filesystem::file_size(db_path()) +
                                    std::filesystem::file_size(db_path().string() + "-wal")) /
                    (1 << 20));
}

} // namespace
} // namespace pkbw::test
