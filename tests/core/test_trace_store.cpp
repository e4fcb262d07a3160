// Traces in the run store (schema 2): round trip, replacement, windows, cascading delete, errors;
// and the export path the CLI uses (store -> Chrome trace / CSV).
#include "pkbw/core/chrome_trace.h"
#include "pkbw/core/error.h"
#include "pkbw/core/trace_store.h"
#include "store_test_util.h"
#include "trace_test_util.h"

#include <fstream>

namespace pkbw {
namespace {

using namespace pkbw::testing;
using pkbw::test::sample_run;
using pkbw::test::StoreTest;

class TraceStoreTest : public StoreTest {};

std::vector<RankTrace> two_ranks() {
    auto traces = chrome_sample();
    traces[0].names["thread:100"] = "main";
    traces[0].complete = false;
    traces[0].events[0].payload = {{"trial", 3}, {"note", "x"}};
    traces[0].events.back().correlation_id = 12;
    for (auto& e : traces[1].events)
        e.peer_memory = e.kind == TraceEventKind::Kernel; // kept in the row's details
    traces[1].pid = 99;
    traces[1].source = "engine+cupti";
    return traces;
}

TEST_F(TraceStoreTest, RoundTripsEveryFieldPerRank) {
    auto store = Store::open(db_path());
    const auto run = store.begin_run(sample_run());
    const auto traces = two_ranks();
    store_run_traces(store, run, traces);

    EXPECT_EQ(traced_ranks(store, run), (std::vector<int>{0, 1}));
    const auto back = load_run_traces(store, run);
    ASSERT_EQ(back.size(), 2u);
    for (std::size_t r = 0; r < 2; ++r) {
        EXPECT_EQ(back[r].rank, traces[r].rank);
        EXPECT_EQ(back[r].pid, traces[r].pid);
        EXPECT_EQ(back[r].source, traces[r].source);
        EXPECT_EQ(back[r].dropped_records, traces[r].dropped_records);
        EXPECT_EQ(back[r].complete, traces[r].complete);
        EXPECT_EQ(back[r].names, traces[r].names);
        auto expected = traces[r].events;
        sort_events(expected);
        EXPECT_EQ(back[r].events, expected);
    }
    // A reader sees the same through a read-only store.
    const auto reader = Store::open_read_only(db_path());
    EXPECT_EQ(load_run_traces(reader, run, 1).at(0).events, back[1].events);
}

TEST_F(TraceStoreTest, ReplacesARanksTraceAndFiltersByWindow) {
    auto store = Store::open(db_path());
    const auto run = store.begin_run(sample_run());
    store_run_traces(store, run, two_ranks());
    RankTrace again;
    again.rank = 1;
    again.events = {kernel("only", 5, 6)};
    store_run_traces(store, run, {again});
    const auto one = load_run_traces(store, run, 1);
    ASSERT_EQ(one.size(), 1u);
    ASSERT_EQ(one[0].events.size(), 1u);
    EXPECT_EQ(one[0].events[0].name, "only");
    EXPECT_EQ(load_run_traces(store, run, 0).at(0).events.size(), two_ranks()[0].events.size());

    // Rank 0 events of chrome_sample() overlapping [1'002'900, 1'003'550] (bounds inclusive): perf,
    // it0, gemm [2000, 3000], late [2500, 3500] (offsets from 1'000'000); the AllReduce kernel ends at
    // 2800 and the second gemm starts at 3600.
    const auto w = load_run_traces(store, run, 0, TimeWindow{1'002'900, 1'003'550});
    ASSERT_EQ(w.size(), 1u);
    std::vector<std::string> names;
    for (const auto& e : w[0].events) {
        names.push_back(e.name);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"perf", "it0", "gemm", "late"}));
}

TEST_F(TraceStoreTest, DeletingTheRunDeletesItsTraces) {
    auto store = Store::open(db_path());
    const auto run = store.begin_run(sample_run());
    const auto other = store.begin_run(sample_run(1));
    store_run_traces(store, run, two_ranks());
    store_run_traces(store, other, two_ranks());
    store.delete_run(run);
    EXPECT_TRUE(load_run_traces(store, run).empty());
    EXPECT_EQ(load_run_traces(store, other).size(), 2u);
    delete_run_traces(store, other);
    EXPECT_TRUE(traced_ranks(store, other).empty());
}

TEST_F(TraceStoreTest, ErrorsNameTheStoreAndRun) {
    auto store = Store::open(db_path());
    try {
        store_run_traces(store, 4242, two_ranks());
        FAIL() << "no error";
    } catch (const StoreError& error) {
        EXPECT_NE(std::string(error.what()).find(db_path().string()), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("no run 4242"), std::string::npos) << error.what();
    }
    const auto run = store.begin_run(sample_run());
    const auto reader = Store::open_read_only(db_path());
    EXPECT_THROW(store_run_traces(const_cast<Store&>(reader), run, two_ranks()), StoreError);
    EXPECT_TRUE(traced_ranks(store, run).empty());
    EXPECT_TRUE(traced_ranks(store, 4242).empty());
}

TEST_F(TraceStoreTest, ExportsFromTheStore) {
    auto store = Store::open(db_path());
    const auto run = store.begin_run(sample_run());
    store_run_traces(store, run, two_ranks());
    const auto traces = load_run_traces(store, run);
    export_chrome_trace(traces, dir_ / "run.json");
    export_kernel_summary_csv(traces, dir_ / "run.csv");
    std::ifstream json_in(dir_ / "run.json");
    const auto doc = nlohmann::json::parse(json_in);
    EXPECT_EQ(doc, chrome_trace_json(two_ranks()));
    std::ifstream csv_in(dir_ / "run.csv");
    std::string header, first;
    std::getline(csv_in, header);
    std::getline(csv_in, first);
    EXPECT_EQ(first, "gemm,3,2100,700.0,1000,100,1000");
}

} // namespace
} // namespace pkbw
