// The trace directory loaders against what a candidate could leave in trace/candidate: each bad file
// costs only itself, named with its reason, and the judges' files are kept.
#include "pkbw/core/error.h"
#include "pkbw/core/kineto.h"
#include "pkbw/core/trace.h"
#include "trace_test_util.h"

#include <chrono>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

namespace pkbw {
namespace {

namespace fs = std::filesystem;
using testing::range;
using testing::TempDir;

const std::string kSecret = "secret-event-outside-the-run-5c2e";

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Whether any event of the traces is named `name`.
bool has_event(const std::vector<RankTrace>& traces, const std::string& name) {
    for (const auto& t : traces) {
        for (const auto& e : t.events) {
            if (e.name == name) {
                return true;
            }
        }
    }
    return false;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& line : lines) {
        out += line + "\n";
    }
    return out;
}

RankTrace one_range_trace(int rank, const std::string& name, std::string source = "engine") {
    RankTrace t;
    t.rank = rank;
    t.source = std::move(source);
    t.events = {range(TraceEventKind::EngineRange, "iteration", name, 10, 20)};
    return t;
}

// A trace directory with the judges' files of ranks 0 and 1 (one reference iteration each).
struct TraceFolder {
    TraceFolder() {
        fs::create_directories(dir.path() / "candidate");
        for (int rank : {0, 1}) {
            save_trace_file(one_range_trace(rank, "reference/0"),
                            dir.path() / ("rank_" + std::to_string(rank) + ".engine.jsonl"));
        }
    }
    fs::path candidate(const std::string& name) const { return dir.path() / "candidate" / name; }
    TempDir dir;
};

void expect_judges_kept(const std::vector<RankTrace>& traces) {
    ASSERT_EQ(traces.size(), 2u);
    for (const auto& t : traces) {
        EXPECT_TRUE(std::any_of(t.events.begin(), t.events.end(),
                                [](const TraceEvent& e) { return e.name == "reference/0"; }))
            << "rank " << t.rank;
    }
}

TEST(UntrustedTraces, ALinkToAValidTraceOutsideIsRefusedAndNoneOfItsEventsLoaded) {
    TraceFolder folder;
    TempDir outside;
    save_trace_file(one_range_trace(0, kSecret), outside.path() / "rank_0.engine.jsonl");
    save_trace_file(one_range_trace(0, "candidate/0"), folder.candidate("rank_1.engine.jsonl"));
    fs::create_symlink(outside.path() / "rank_0.engine.jsonl", folder.candidate("rank_0.engine.jsonl"));
    fs::create_symlink("../rank_1.engine.jsonl",
                       folder.candidate("rank_1.cupti.jsonl")); // the judge's, twice
    std::vector<std::string> skipped;
    const auto traces = load_trace_directory(folder.dir.path(), &skipped);
    expect_judges_kept(traces);
    EXPECT_FALSE(has_event(traces, kSecret));
    EXPECT_EQ(traces[1].events.size(), 1u); // the judge's file once, and no candidate/0 (its rank is 0)
    ASSERT_EQ(skipped.size(), 3u) << joined(skipped);
    EXPECT_TRUE(contains(skipped[0], "candidate/rank_0.engine.jsonl: a symbolic link: not followed"));
    EXPECT_TRUE(contains(skipped[1], "candidate/rank_1.cupti.jsonl: a symbolic link: not followed"));
    EXPECT_TRUE(contains(skipped[2], "candidate/rank_1.engine.jsonl:1: header rank 0 does not match"));
    // Read strictly (no list of skipped files), the first bad file is the error.
    EXPECT_THROW(load_trace_directory(folder.dir.path()), FormatError);
}

TEST(UntrustedTraces, ALinkedCandidateFolderIsNotFollowed) {
    TraceFolder folder;
    TempDir outside;
    save_trace_file(one_range_trace(0, kSecret), outside.path() / "rank_0.engine.jsonl");
    fs::remove(folder.dir.path() / "candidate");
    fs::create_symlink(outside.path(), folder.dir.path() / "candidate");
    std::vector<std::string> skipped;
    const auto traces = load_trace_directory(folder.dir.path(), &skipped);
    expect_judges_kept(traces);
    EXPECT_FALSE(has_event(traces, kSecret));
    ASSERT_EQ(skipped.size(), 1u) << joined(skipped);
    EXPECT_TRUE(contains(skipped[0], "candidate: a symbolic link: not followed")) << skipped[0];
}

TEST(UntrustedTraces, ASparseGibibyteIsRefusedBySizeAndCostsNoMemory) {
    TraceFolder folder;
    {
        const int fd =
            ::open(folder.candidate("rank_0.cupti.jsonl").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::ftruncate(fd, 1ll << 30), 0);
        ::close(fd);
    }
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> skipped;
    const auto traces = load_trace_directory(folder.dir.path(), &skipped);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    ::getrusage(RUSAGE_SELF, &after);
    EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 16 * 1024); // KiB
    expect_judges_kept(traces);
    ASSERT_EQ(skipped.size(), 1u) << joined(skipped);
    EXPECT_TRUE(contains(skipped[0], "candidate/rank_0.cupti.jsonl: 1073741824 bytes, over the cap of " +
                                         std::to_string(kCuptiTraceMaxBytes)))
        << skipped[0];
}

TEST(UntrustedTraces, MalformedCandidateFilesLeaveTheJudgesLoadedAndAreNamed) {
    TraceFolder folder;
    std::ofstream(folder.candidate("rank_0.engine.jsonl")) << "{\"format\":\"pkbw-trace\", garbage\n";
    std::ofstream(folder.candidate("rank_1.cupti.jsonl")) << std::string(kTraceLineMaxBytes + 1, '[') << "\n";
    std::ofstream(folder.candidate("rank_99999999999.engine.jsonl")) << "ignored: no rank has that name";
    save_trace_file(one_range_trace(1, "candidate/0"), folder.candidate("rank_1.engine.jsonl"));
    std::vector<std::string> skipped;
    const auto traces = load_trace_directory(folder.dir.path(), &skipped);
    expect_judges_kept(traces);
    EXPECT_TRUE(has_event(traces, "candidate/0")); // the candidate's good file is kept
    ASSERT_EQ(skipped.size(), 2u) << joined(skipped);
    EXPECT_TRUE(contains(skipped[0], "candidate/rank_0.engine.jsonl:1: invalid JSON")) << skipped[0];
    EXPECT_TRUE(contains(skipped[1], "candidate/rank_1.cupti.jsonl:1: a line of 1048577 bytes, over the cap"))
        << skipped[1];
}

TEST(UntrustedTraces, TheCandidatesFilesShareOneBudget) {
    TraceFolder folder;
    for (int rank : {0, 1}) {
        save_trace_file(one_range_trace(rank, "candidate/0"),
                        folder.candidate("rank_" + std::to_string(rank) + ".engine.jsonl"));
    }
    const auto size = fs::file_size(folder.candidate("rank_0.engine.jsonl"));
    CandidateTraceBudget budget;
    budget.bytes = size + size / 2; // room for one file, not two
    std::vector<std::string> skipped;
    auto traces = load_trace_directory(folder.dir.path(), &skipped, &budget);
    expect_judges_kept(traces);
    ASSERT_EQ(skipped.size(), 1u) << joined(skipped);
    EXPECT_TRUE(contains(skipped[0], "candidate/rank_1.engine.jsonl")) << skipped[0];
    EXPECT_TRUE(contains(skipped[0], "what is left of the candidate's trace budget")) << skipped[0];

    budget = CandidateTraceBudget{};
    budget.events = 1;
    skipped.clear();
    traces = load_trace_directory(folder.dir.path(), &skipped, &budget);
    ASSERT_EQ(skipped.size(), 1u) << joined(skipped);
    EXPECT_TRUE(contains(skipped[0], "candidate/rank_1.engine.jsonl:2: more than 0 events")) << skipped[0];

    budget = CandidateTraceBudget{};
    budget.files = 1;
    skipped.clear();
    traces = load_trace_directory(folder.dir.path(), &skipped, &budget);
    ASSERT_EQ(skipped.size(), 1u) << joined(skipped);
    EXPECT_TRUE(contains(skipped[0], "candidate: 1 more trace files than the 1 read")) << skipped[0];
}

TEST(UntrustedTraces, TooManyEventsInOneFileAreRefused) {
    std::string text = trace_header_json(0, 1, "engine").dump() + "\n";
    for (int i = 0; i < 5; ++i) {
        text += to_json(range(TraceEventKind::EngineRange, "iteration", "i", i, i + 1)).dump() + "\n";
    }
    EXPECT_EQ(parse_trace_text(text, "t", 5).events.size(), 5u);
    try {
        parse_trace_text(text, "t", 4);
        FAIL() << "five events read under a cap of four";
    } catch (const FormatError& e) {
        EXPECT_TRUE(contains(e.what(), "t:6: more than 4 events: not read")) << e.what();
    }
}

// A profile: one kernel event per entry of `names`, and the header keys given.
std::string profile(const std::vector<std::string>& names, const std::string& extra = "") {
    std::string events;
    for (const auto& name : names) {
        events += std::string(events.empty() ? "" : ",") + R"({"ph":"X","cat":"kernel","name":")" + name +
                  R"(","ts":1,"dur":2,"pid":0,"tid":7,"args":{"stream":7,"device":0,"grid":[1,1,1]}})";
    }
    return R"({"baseTimeNanoseconds":1000,)" + extra + R"("traceEvents":[)" + events + "]}";
}

TEST(UntrustedTraces, AProfilerTraceLinkedFromOutsideIsRefusedAndTheReferencesKept) {
    TempDir dir, outside;
    fs::create_directories(dir.path() / "candidate");
    std::ofstream(dir.path() / "rank_0.reference.torch.json") << profile({"ref_kernel"});
    std::ofstream(outside.path() / "p.json") << profile({kSecret});
    fs::create_symlink(outside.path() / "p.json", dir.path() / "candidate" / "rank_0.candidate.torch.json");
    std::ofstream(dir.path() / "candidate" / "rank_1.candidate.torch.json") << "{\"traceEvents\": [1, 2";
    std::vector<std::string> skipped;
    const auto traces = load_profiler_directory(dir.path(), &skipped);
    ASSERT_EQ(traces.size(), 1u);
    EXPECT_TRUE(has_event(traces, "ref_kernel"));
    EXPECT_FALSE(has_event(traces, kSecret));
    ASSERT_EQ(skipped.size(), 2u) << joined(skipped);
    EXPECT_TRUE(contains(skipped[0], "rank_0.candidate.torch.json: a symbolic link: not followed"));
    EXPECT_TRUE(contains(skipped[1], "rank_1.candidate.torch.json: traceEvents[0] is not an object"));
}

TEST(UntrustedTraces, AProfilerTraceIsParsedWithinItsCaps) {
    const auto t = parse_kineto_trace(profile({"a", "b"}, R"("traceName":"x","schemaVersion":1,)"), "p");
    EXPECT_EQ(t.events.size(), 2u); // other top-level keys are read past
    EXPECT_EQ(t.events[0].start_ns, 1000 + 1000);
    EXPECT_EQ(t.events[0].args["grid"], nlohmann::json({1, 1, 1}));
    const auto refused = [](const std::string& text, std::size_t max_events) {
        try {
            parse_kineto_trace(text, "p", 0, max_events);
        } catch (const FormatError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_TRUE(contains(refused(profile({"a", "b", "c"}), 2), "p: more than 2 events: not read"));
    std::string deep = "[";
    for (std::size_t i = 0; i <= kKinetoEventMaxValues; ++i) {
        deep += i ? ",0" : "0";
    }
    deep += "]";
    EXPECT_TRUE(contains(refused(R"({"traceEvents":[{"ph":"X","ts":0,"args":{"x":)" + deep + "}}]}", 10),
                         "p: traceEvents[0] holds more than 4096 JSON values"));
    EXPECT_TRUE(contains(refused(R"({"deviceProperties":)" + deep + std::string(R"(,"traceEvents":[]})"), 10),
                         "accepted"));
    std::string junk = "[0";
    for (std::size_t i = 0; i < kKinetoHeaderMaxValues; ++i) {
        junk += ",0";
    }
    EXPECT_TRUE(contains(refused(R"({"junk":)" + junk + R"(],"traceEvents":[]})", 10),
                         "p: more than 65536 JSON values outside traceEvents: not read"));
    EXPECT_TRUE(
        contains(refused(R"({"traceEvents":[],"traceEvents":[]})", 10), "'traceEvents' appears twice"));
    EXPECT_TRUE(contains(refused(R"({"traceEvents":{"a":{"ph":"X"}}})", 10), "no 'traceEvents' array"));
    EXPECT_TRUE(contains(refused(R"({"baseTimeNanoseconds":9223372036854775807,"traceEvents":[]})", 10),
                         "'baseTimeNanoseconds' is not an integer between 0 and 4e18"));
}

} // namespace
} // namespace pkbw
