// Chrome Trace Event Format export (required fields, microsecond units, per-thread nesting) and the
// kernel summary CSV.
#include "pkbw/core/chrome_trace.h"
#include "pkbw/core/error.h"
#include "trace_test_util.h"

#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>

namespace pkbw {
namespace {

using namespace pkbw::testing;
using nlohmann::json;

// Checks the structure chrome://tracing and Perfetto need; returns X slices by (pid, tid).
std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> check_structure(const json& doc) {
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> lanes;
    EXPECT_TRUE(doc.at("traceEvents").is_array());
    std::set<std::pair<int, int>> named_threads;
    std::set<int> named_processes;
    for (const auto& e : doc["traceEvents"]) {
        EXPECT_TRUE(e.contains("ph") && e["ph"].is_string()) << e.dump();
        EXPECT_TRUE(e.contains("pid") && e["pid"].is_number_integer()) << e.dump();
        EXPECT_TRUE(e.contains("name") && e["name"].is_string()) << e.dump();
        const auto ph = e["ph"].get<std::string>();
        if (ph == "M") {
            if (e["name"] == "process_name")
                named_processes.insert(e["pid"].get<int>());
            if (e["name"] == "thread_name")
                named_threads.insert({e["pid"].get<int>(), e["tid"].get<int>()});
            EXPECT_TRUE(e["args"].is_object());
            continue;
        }
        EXPECT_TRUE(e.contains("tid") && e["tid"].is_number_integer()) << e.dump();
        EXPECT_TRUE(e.contains("ts") && e["ts"].is_number()) << e.dump();
        EXPECT_GE(e["ts"].get<double>(), 0.0);
        const std::pair<int, int> key{e["pid"].get<int>(), e["tid"].get<int>()};
        EXPECT_TRUE(named_threads.count(key)) << "thread without thread_name: " << e.dump();
        EXPECT_TRUE(named_processes.count(key.first));
        if (ph == "X") {
            EXPECT_TRUE(e.contains("dur") && e["dur"].is_number() && e["dur"].get<double>() >= 0) << e.dump();
            lanes[key].emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
        } else {
            EXPECT_EQ(ph, "i") << e.dump();
            EXPECT_EQ(e["s"], "t");
        }
    }
    return lanes;
}

bool nests(std::vector<std::pair<double, double>> slices) {
    std::sort(slices.begin(), slices.end(),
              [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    std::vector<double> open;
    for (const auto& [s, e] : slices) {
        while (!open.empty() && open.back() <= s + 1e-9)
            open.pop_back();
        if (!open.empty() && open.back() < e - 1e-9)
            return false;
        open.push_back(e);
    }
    return true;
}

const json* find_event(const json& doc, const std::string& name, int pid) {
    for (const auto& e : doc["traceEvents"]) {
        if (e["name"] == name && e["pid"] == pid && e["ph"] != "M")
            return &e;
    }
    return nullptr;
}

TEST(ChromeTrace, EventsHaveRequiredFieldsAndNestPerThread) {
    const auto doc = chrome_trace_json(chrome_sample());
    const auto lanes = check_structure(doc);
    for (const auto& [key, slices] : lanes) {
        EXPECT_TRUE(nests(slices)) << "pid " << key.first << " tid " << key.second;
    }
    EXPECT_EQ(doc["otherData"]["time_origin_ns"], 1'000'000);
    EXPECT_EQ(doc["otherData"]["dropped_records"]["0"], 2);
    EXPECT_EQ(doc["displayTimeUnit"], "ns");
}

TEST(ChromeTrace, MicrosecondsFromTheEarliestEvent) {
    const auto doc = chrome_trace_json(chrome_sample());
    const auto* late = find_event(doc, "late", 0);
    ASSERT_NE(late, nullptr);
    EXPECT_DOUBLE_EQ((*late)["ts"].get<double>(), 2.5); // (1'002'500 - 1'000'000) ns
    EXPECT_DOUBLE_EQ((*late)["dur"].get<double>(), 1.0);
    const auto* r1 = find_event(doc, "gemm", 1);
    ASSERT_NE(r1, nullptr);
    EXPECT_DOUBLE_EQ((*r1)["ts"].get<double>(), 0.25);
    EXPECT_EQ((*r1)["args"]["device"], 1);
    EXPECT_EQ((*r1)["args"]["grid"], json::array({4, 1, 1}));
    EXPECT_EQ((*r1)["args"]["registers"], 32);
    EXPECT_FALSE((*r1)["args"].contains("peer_memory"));
    auto peer = chrome_sample();
    peer[1].events[0].peer_memory = true;
    const auto peer_doc = chrome_trace_json(peer);
    EXPECT_EQ((*find_event(peer_doc, "gemm", 1))["args"]["peer_memory"], true);
    const auto* copy_event = find_event(doc, "memcpy HtoD", 0);
    ASSERT_NE(copy_event, nullptr);
    EXPECT_EQ((*copy_event)["args"]["bytes"], 4096);
    EXPECT_EQ((*copy_event)["cat"], "memcpy");
    const auto* mark = find_event(doc, "go", 0);
    ASSERT_NE(mark, nullptr);
    EXPECT_EQ((*mark)["ph"], "i");
}

TEST(ChromeTrace, ThreadsPerStreamEngineAndNvtxWithOverflowLanes) {
    const auto doc = chrome_trace_json(chrome_sample());
    std::map<std::string, int> tid_of;
    for (const auto& e : doc["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 0) {
            tid_of[e["args"]["name"].get<std::string>()] = e["tid"].get<int>();
        }
    }
    ASSERT_EQ(tid_of.size(), 5u) << json(tid_of).dump();
    EXPECT_TRUE(tid_of.count("engine"));
    EXPECT_TRUE(tid_of.count("nvtx thread 100"));
    EXPECT_TRUE(tid_of.count("stream 7 (device 0)"));
    EXPECT_TRUE(tid_of.count("stream 7 (device 0) #2"));
    EXPECT_TRUE(tid_of.count("stream 9 (device 0)"));
    // The iterations nest in "perf" on the engine thread; the mark sits with them.
    EXPECT_EQ((*find_event(doc, "it0", 0))["tid"], tid_of["engine"]);
    EXPECT_EQ((*find_event(doc, "it1", 0))["tid"], tid_of["engine"]);
    EXPECT_EQ((*find_event(doc, "go", 0))["tid"], tid_of["engine"]);
    EXPECT_EQ((*find_event(doc, "ncclAllReduce", 0))["tid"], tid_of["nvtx thread 100"]);
    EXPECT_EQ((*find_event(doc, "late", 0))["tid"], tid_of["stream 7 (device 0) #2"]);
    EXPECT_EQ((*find_event(doc, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0))["tid"],
              tid_of["stream 9 (device 0)"]);
}

TEST(ChromeTrace, ExportWritesParseableFile) {
    TempDir dir;
    export_chrome_trace(chrome_sample(), dir.path() / "t.json");
    std::ifstream in(dir.path() / "t.json");
    const auto doc = json::parse(in);
    EXPECT_EQ(doc["traceEvents"].size(), chrome_trace_json(chrome_sample())["traceEvents"].size());
    EXPECT_THROW(export_chrome_trace(chrome_sample(), "/nonexistent-dir/t.json"), Error);
    EXPECT_EQ(chrome_trace_json({})["traceEvents"].size(), 0u);
}

TEST(KernelCsv, QuotesNamesAndMatchesTheSummary) {
    std::vector<KernelStats> stats(2);
    stats[0] = {"void f<int, 2>(float*)", 3, 300, 100.0, 120, 80, 120};
    stats[1] = {"say \"hi\"", 1, 7, 7.0, 7, 7, 7};
    EXPECT_EQ(kernel_summary_csv(stats), "name,count,total_ns,mean_ns,p95_ns,min_ns,max_ns\n"
                                         "\"void f<int, 2>(float*)\",3,300,100.0,120,80,120\n"
                                         "\"say \"\"hi\"\"\",1,7,7.0,7,7,7\n");
    TempDir dir;
    export_kernel_summary_csv(chrome_sample(), dir.path() / "k.csv");
    std::ifstream in(dir.path() / "k.csv");
    std::string header, first;
    std::getline(in, header);
    std::getline(in, first);
    // gemm: 1000 + 100 (rank 0) + 1000 (rank 1) = 2100 ns over 3 calls.
    EXPECT_EQ(first, "gemm,3,2100,700.0,1000,100,1000");
}

} // namespace
} // namespace pkbw
