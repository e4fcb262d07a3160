// The trace model, its file format (strict reading, truncation) and the host recorder.
#include "pkbw/core/error.h"
#include "pkbw/core/trace.h"
#include "trace_test_util.h"

#include <gtest/gtest.h>
#include <thread>

namespace pkbw {
namespace {

using namespace pkbw::testing;

const std::string kHeader =
    R"({"format":"pkbw-trace","version":1,"rank":2,"pid":77,"source":"cupti","clock":"CLOCK_MONOTONIC"})";

std::string error_of(const std::filesystem::path& path) {
    try {
        load_trace_file(path);
    } catch (const FormatError& error) {
        return error.what();
    }
    return "no error";
}

TEST(TraceFile, RoundTripKeepsEveryField) {
    TempDir dir;
    RankTrace trace;
    trace.rank = 3;
    trace.pid = 4242;
    trace.source = "cupti";
    trace.dropped_records = 5;
    trace.names["thread:100"] = "main";
    auto k = kernel("_Z3addPfS_", 1000, 2500);
    k.demangled = "add(float*, float*)";
    k.correlation_id = 91;
    k.shared_memory = 4096;
    k.peer_memory = true;
    auto m = copy(TraceEventKind::Memcpy, 3000, 3100, 1 << 20);
    m.src_device = 0;
    m.dst_device = 1;
    auto r = range(TraceEventKind::NvtxRange, "", "ncclAllReduce", 900, 2600, "NCCL");
    r.payload = {{"count", 1024}, {"datatype_size", 2}};
    trace.events = {r, k, m};
    save_trace_file(trace, dir.path() / "rank_3.cupti.jsonl");

    const auto loaded = load_trace_file(dir.path() / "rank_3.cupti.jsonl");
    EXPECT_EQ(loaded.rank, 3);
    EXPECT_EQ(loaded.pid, 4242);
    EXPECT_EQ(loaded.source, "cupti");
    EXPECT_EQ(loaded.dropped_records, 5u);
    EXPECT_TRUE(loaded.complete);
    EXPECT_EQ(loaded.names.at("thread:100"), "main");
    ASSERT_EQ(loaded.events.size(), 3u);
    EXPECT_EQ(loaded.events[0], r);
    EXPECT_EQ(loaded.events[1], k);
    EXPECT_EQ(loaded.events[2], m);
    EXPECT_EQ(loaded.events[1].display_name(), "add(float*, float*)");
}

TEST(TraceFile, DefaultsAreLeftOutOfLines) {
    const auto j = to_json(range(TraceEventKind::EngineRange, "phase", "inputs", 1, 2));
    EXPECT_FALSE(j.contains("grid"));
    EXPECT_FALSE(j.contains("stream"));
    EXPECT_FALSE(j.contains("payload"));
    EXPECT_FALSE(j.contains("peer_memory"));
    EXPECT_EQ(j["kind"], "engine_range");
}

TEST(TraceFile, ErrorsNameFileLineAndField) {
    TempDir dir;
    auto path =
        dir.write("bad.jsonl", kHeader + "\n" + R"({"kind":"kernel","name":"k","start_ns":1,"end_ns":2})" +
                                   "\n" + R"({"kind":"kernel","name":"k","start_ns":"x","end_ns":2})" + "\n");
    const auto message = error_of(path);
    EXPECT_NE(message.find(path.string() + ":3"), std::string::npos) << message;
    EXPECT_NE(message.find("start_ns"), std::string::npos) << message;

    path = dir.write("unknown.jsonl",
                     kHeader + "\n" + R"({"kind":"kernel","name":"k","start":1,"end_ns":2})" + "\n");
    EXPECT_NE(error_of(path).find("unknown.jsonl:2: unknown field 'start'"), std::string::npos)
        << error_of(path);

    path = dir.write("order.jsonl",
                     kHeader + "\n" + R"({"kind":"kernel","name":"k","start_ns":5,"end_ns":2})" + "\n");
    EXPECT_NE(error_of(path).find("order.jsonl:2: field 'end_ns'"), std::string::npos) << error_of(path);

    path = dir.write("kind.jsonl",
                     kHeader + "\n" + R"({"kind":"warp","name":"k","start_ns":1,"end_ns":2})" + "\n");
    EXPECT_NE(error_of(path).find("unknown event kind 'warp'"), std::string::npos);

    path = dir.write("grid.jsonl",
                     kHeader + "\n" + R"({"kind":"kernel","name":"k","start_ns":1,"end_ns":2,"grid":[1,2]})" +
                         "\n");
    EXPECT_NE(error_of(path).find("grid.jsonl:2: field 'grid'"), std::string::npos);

    path = dir.write("peer.jsonl",
                     kHeader + "\n" +
                         R"({"kind":"kernel","name":"k","start_ns":1,"end_ns":2,"peer_memory":1})" + "\n");
    EXPECT_NE(error_of(path).find("peer.jsonl:2: field 'peer_memory': expected true or false"),
              std::string::npos)
        << error_of(path);
}

TEST(TraceFile, RejectsBadHeaders) {
    TempDir dir;
    EXPECT_NE(error_of(dir.write("empty.jsonl", "")).find("empty.jsonl:1: missing header"),
              std::string::npos);
    EXPECT_NE(error_of(dir.write("fmt.jsonl", R"({"format":"other","version":1,"rank":0})"
                                              "\n"))
                  .find("fmt.jsonl:1: not a pkbw trace"),
              std::string::npos);
    EXPECT_NE(error_of(dir.write("ver.jsonl",
                                 R"({"format":"pkbw-trace","version":2,"rank":0,"clock":"CLOCK_MONOTONIC"})"
                                 "\n"))
                  .find("unsupported version 2"),
              std::string::npos);
    EXPECT_NE(error_of(dir.write("clk.jsonl",
                                 R"({"format":"pkbw-trace","version":1,"rank":0,"clock":"CLOCK_REALTIME"})"
                                 "\n"))
                  .find("field 'clock'"),
              std::string::npos);
    EXPECT_NE(error_of(dir.write("garbage.jsonl", "not json\n")).find("garbage.jsonl:1: invalid JSON"),
              std::string::npos);
}

TEST(TraceFile, EndLineIsChecked) {
    TempDir dir;
    const std::string ev = R"({"kind":"kernel","name":"k","start_ns":1,"end_ns":2})";
    auto path = dir.write("count.jsonl", kHeader + "\n" + ev + "\n" + R"({"end":true,"events":2})" + "\n");
    EXPECT_NE(error_of(path).find("count.jsonl:3: field 'events'"), std::string::npos) << error_of(path);
    path = dir.write("after.jsonl", kHeader + "\n" + R"({"end":true,"events":0})" + "\n" + ev + "\n");
    EXPECT_NE(error_of(path).find("after.jsonl:3: content after the end line"), std::string::npos);
}

TEST(TraceFile, TruncatedFilesKeepTheirEventsAndSaySo) {
    TempDir dir;
    const std::string ev = R"({"kind":"kernel","name":"k","start_ns":1,"end_ns":2})";
    auto no_end = load_trace_file(dir.write("noend.jsonl", kHeader + "\n" + ev + "\n"));
    EXPECT_FALSE(no_end.complete);
    EXPECT_EQ(no_end.events.size(), 1u);

    auto cut = load_trace_file(dir.write("cut.jsonl", kHeader + "\n" + ev + "\n" + R"({"kind":"kern)"));
    EXPECT_FALSE(cut.complete);
    EXPECT_EQ(cut.events.size(), 1u);

    // A bad line in the middle is corruption, not truncation.
    auto path = dir.write("mid.jsonl", kHeader + "\n" + R"({"kind":"kern)" + "\n" + ev + "\n");
    EXPECT_NE(error_of(path).find("mid.jsonl:2: invalid JSON"), std::string::npos);
}

TEST(TraceMerge, InterleavesDropsDuplicateNvtxAndSumsDropped) {
    RankTrace engine, cupti;
    engine.rank = cupti.rank = 1;
    engine.source = "engine";
    cupti.source = "cupti";
    engine.events = {range(TraceEventKind::EngineRange, "phase", "perf", 100, 900),
                     range(TraceEventKind::NvtxMark, "trial", "start", 150, 150)};
    cupti.events = {kernel("k", 200, 300), range(TraceEventKind::NvtxRange, "phase", "perf", 101, 899),
                    range(TraceEventKind::NvtxRange, "", "ncclAllReduce", 120, 130, "NCCL")};
    cupti.dropped_records = 3;
    cupti.complete = false;
    const auto merged = merge_rank_traces({engine, cupti});
    EXPECT_EQ(merged.source, "engine+cupti");
    EXPECT_EQ(merged.dropped_records, 3u);
    EXPECT_FALSE(merged.complete);
    ASSERT_EQ(merged.events.size(), 4u); // CUPTI's copy of the pkbw range is gone; the engine's mark stays
    EXPECT_EQ(merged.events[0].name, "perf");
    EXPECT_EQ(merged.events[0].kind, TraceEventKind::EngineRange);
    EXPECT_EQ(merged.events[1].name, "ncclAllReduce");
    EXPECT_EQ(merged.events[2].name, "start");
    EXPECT_EQ(merged.events[3].name, "k");

    RankTrace other;
    other.rank = 2;
    EXPECT_THROW(merge_rank_traces({engine, other}), Error);
}

TEST(TraceMerge, LoadsADirectoryByRank) {
    TempDir dir;
    RankTrace a, b, c;
    a.rank = 0;
    a.source = "engine";
    a.events = {range(TraceEventKind::EngineRange, "phase", "inputs", 10, 20)};
    b = a;
    b.source = "cupti";
    b.events = {kernel("k", 12, 15)};
    c = a;
    c.rank = 1;
    save_trace_file(a, dir.path() / "rank_0.engine.jsonl");
    save_trace_file(b, dir.path() / "rank_0.cupti.jsonl");
    save_trace_file(c, dir.path() / "rank_1.engine.jsonl");
    dir.write("rank_0.events.jsonl", "{\"event\":\"hello\"}\n");
    dir.write("notes.txt", "ignored");
    const auto traces = load_trace_directory(dir.path());
    ASSERT_EQ(traces.size(), 2u);
    EXPECT_EQ(traces[0].rank, 0);
    EXPECT_EQ(traces[0].events.size(), 2u);
    EXPECT_EQ(traces[1].rank, 1);

    save_trace_file(c, dir.path() / "rank_5.engine.jsonl");
    EXPECT_THROW(load_trace_directory(dir.path()), FormatError);
}

TEST(TraceRecorder, WritesNestedRangesMarksAndAnEndLine) {
    TempDir dir;
    const auto path = dir.path() / "rank_0.engine.jsonl";
    const auto before = trace_now_ns();
    {
        TraceRecorder recorder(path, 0);
        recorder.begin_range("phase", "perf", {{"trial", 0}});
        {
            TraceRecorder::Scope it(&recorder, "iteration", "perf/candidate/0");
            recorder.mark("note", "launched");
        }
        recorder.end_range();
        TraceRecorder::Scope off(nullptr, "iteration", "ignored");
        EXPECT_THROW(recorder.end_range(), Error);
        EXPECT_EQ(recorder.events_written(), 3u);
    }
    const auto after = trace_now_ns();
    const auto trace = load_trace_file(path);
    EXPECT_TRUE(trace.complete);
    EXPECT_EQ(trace.source, "engine");
    EXPECT_EQ(trace.pid, ::getpid());
    ASSERT_EQ(trace.events.size(), 3u);
    const auto& perf = trace.events[0];
    const auto& iteration = trace.events[1];
    const auto& mark = trace.events[2];
    EXPECT_EQ(perf.name, "perf");
    EXPECT_EQ(perf.category, "phase");
    EXPECT_EQ(perf.payload["trial"], 0);
    EXPECT_EQ(perf.kind, TraceEventKind::EngineRange);
    EXPECT_EQ(iteration.name, "perf/candidate/0");
    EXPECT_EQ(mark.kind, TraceEventKind::NvtxMark);
    EXPECT_LE(before, perf.start_ns);
    EXPECT_LE(perf.start_ns, iteration.start_ns);
    EXPECT_LE(iteration.start_ns, mark.start_ns);
    EXPECT_LE(mark.start_ns, iteration.end_ns);
    EXPECT_LE(iteration.end_ns, perf.end_ns);
    EXPECT_LE(perf.end_ns, after);
    EXPECT_NE(perf.thread, 0);
    EXPECT_EQ(perf.thread, mark.thread);
}

TEST(TraceRecorder, RangesNestPerThreadAndUnclosedOnesAreMarked) {
    TempDir dir;
    const auto path = dir.path() / "rank_1.engine.jsonl";
    {
        TraceRecorder recorder(path, 1);
        recorder.begin_range("phase", "outer");
        std::thread worker([&] {
            recorder.begin_range("worker", "inner");
            recorder.end_range(); // closes the worker's range, not the main thread's
        });
        worker.join();
        recorder.begin_range("phase", "left open", 7);
    }
    const auto trace = load_trace_file(path);
    ASSERT_EQ(trace.events.size(), 3u);
    EXPECT_EQ(trace.events[0].name, "outer");
    EXPECT_EQ(trace.events[0].payload["unterminated"], true);
    EXPECT_EQ(trace.events[1].name, "inner");
    EXPECT_NE(trace.events[1].thread, trace.events[0].thread);
    EXPECT_TRUE(trace.events[1].payload.is_null());
    EXPECT_EQ(trace.events[2].payload["value"], 7);
    EXPECT_EQ(trace.events[2].payload["unterminated"], true);
}

TEST(TraceRecorder, UnwritablePathThrowsNamingIt) {
    try {
        TraceRecorder recorder("/nonexistent-dir/rank_0.engine.jsonl", 0);
        FAIL() << "no error";
    } catch (const Error& error) {
        EXPECT_NE(std::string(error.what()).find("/nonexistent-dir/rank_0.engine.jsonl"), std::string::npos);
    }
}

} // namespace
} // namespace pkbw
