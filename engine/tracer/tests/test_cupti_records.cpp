// CUPTI record conversion on hand-made records (no GPU): field mapping, demangling, NVTX pairing.
#include "cupti_records.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace pkbw::tracer {
namespace {

template <typename Record>
const CUpti_Activity* as_activity(const Record& r) {
    return reinterpret_cast<const CUpti_Activity*>(&r);
}

TEST(CuptiRecords, KernelFieldsAndDemangledName) {
    CUpti_ActivityKernel10 k;
    std::memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = "_Z6add_f2PfPKfi";
    k.start = 1000;
    k.end = 3500;
    k.streamId = 13;
    k.deviceId = 1;
    k.correlationId = 77;
    k.gridX = 128, k.gridY = 2, k.gridZ = 1;
    k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.registersPerThread = 40;
    k.staticSharedMemory = 1024;
    k.dynamicSharedMemory = 3072;
    NvtxJoiner nvtx;
    std::vector<TraceEvent> events;
    std::vector<NameRecord> names;
    convert_record(as_activity(k), nvtx, events, names);
    ASSERT_EQ(events.size(), 1u);
    const auto& e = events[0];
    EXPECT_EQ(e.kind, TraceEventKind::Kernel);
    EXPECT_EQ(e.name, "_Z6add_f2PfPKfi");
    EXPECT_EQ(e.demangled, "add_f2(float*, float const*, int)");
    EXPECT_EQ(e.start_ns, 1000);
    EXPECT_EQ(e.end_ns, 3500);
    EXPECT_EQ(e.stream, 13);
    EXPECT_EQ(e.device, 1);
    EXPECT_EQ(e.correlation_id, 77);
    EXPECT_EQ(e.grid, (std::array<int, 3>{128, 2, 1}));
    EXPECT_EQ(e.block, (std::array<int, 3>{256, 1, 1}));
    EXPECT_EQ(e.registers, 40);
    EXPECT_EQ(e.shared_memory, 4096);
    EXPECT_EQ(demangle("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), "");
}

TEST(CuptiRecords, ApiCallsBecomeRangesOnTheirThreadWithTheirCorrelationId) {
    CUpti_ActivityAPI a;
    std::memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 211;
    a.start = 500, a.end = 800, a.threadId = 4242, a.correlationId = 77;
    CUpti_ActivityAPI d = a;
    d.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    d.cbid = 7, d.correlationId = 78, d.returnValue = 1;
    NvtxJoiner nvtx;
    std::vector<TraceEvent> events;
    std::vector<NameRecord> names;
    const ApiNameLookup lookup = [](CUpti_ActivityKind kind, std::uint32_t cbid) {
        return kind == CUPTI_ACTIVITY_KIND_RUNTIME && cbid == 211 ? std::string("cudaLaunchKernel_v7000")
                                                                  : std::string();
    };
    convert_record(as_activity(a), nvtx, events, names, lookup);
    convert_record(as_activity(d), nvtx, events, names, lookup);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].kind, TraceEventKind::NvtxRange);
    EXPECT_EQ(events[0].domain, kCudaApiDomain);
    EXPECT_EQ(events[0].category, "cuda_runtime");
    EXPECT_EQ(events[0].name, "cudaLaunchKernel_v7000");
    EXPECT_EQ(events[0].start_ns, 500);
    EXPECT_EQ(events[0].end_ns, 800);
    EXPECT_EQ(events[0].thread, 4242);
    EXPECT_EQ(events[0].correlation_id, 77); // the kernel it launched carries the same id
    EXPECT_TRUE(events[0].payload.is_null());
    // No name from CUPTI: the callback id; a failed call keeps its return value.
    EXPECT_EQ(events[1].category, "cuda_driver");
    EXPECT_EQ(events[1].name, "cuda_driver 7");
    EXPECT_EQ(events[1].payload["return_value"], 1);
}

TEST(CuptiRecords, CopiesMemsetsAndSyncs) {
    CUpti_ActivityMemcpy6 m;
    std::memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    m.bytes = 1 << 20;
    m.start = 10, m.end = 20, m.streamId = 7, m.deviceId = 0;
    CUpti_ActivityMemcpyPtoP4 p;
    std::memset(&p, 0, sizeof p);
    p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    p.bytes = 4096, p.start = 30, p.end = 40, p.srcDeviceId = 0, p.dstDeviceId = 3;
    CUpti_ActivityMemset4 s;
    std::memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.bytes = 64, s.start = 50, s.end = 55;
    CUpti_ActivitySynchronization2 y;
    std::memset(&y, 0, sizeof y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    y.start = 60, y.end = 90, y.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    NvtxJoiner nvtx;
    std::vector<TraceEvent> events;
    std::vector<NameRecord> names;
    for (const auto* r : {as_activity(m), as_activity(p), as_activity(s), as_activity(y)}) {
        convert_record(r, nvtx, events, names);
    }
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[0].name, "memcpy DtoH");
    EXPECT_EQ(events[0].bytes, 1 << 20);
    EXPECT_EQ(events[1].copy_kind, "PtoP");
    EXPECT_EQ(events[1].dst_device, 3);
    EXPECT_EQ(events[2].kind, TraceEventKind::Memset);
    EXPECT_EQ(events[3].name, "cudaDeviceSynchronize");
    EXPECT_EQ(events[3].stream, -1);
    EXPECT_EQ(events[3].duration_ns(), 30);
}

TEST(CuptiRecords, NvtxRangesPairAcrossBuffersWithPayloads) {
    CUpti_ActivityMarker2 start, end, mark;
    for (auto* r : {&start, &end, &mark}) {
        std::memset(r, 0, sizeof *r);
        r->kind = CUPTI_ACTIVITY_KIND_MARKER;
        r->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
        r->objectId.pt.threadId = 555;
    }
    start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START, start.id = 9, start.timestamp = 100;
    start.name = "ncclAllReduce", start.domain = "NCCL";
    end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END, end.id = 9, end.timestamp = 180;
    mark.flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, mark.id = 10, mark.timestamp = 150,
    mark.name = "go";
    CUpti_ActivityMarkerData2 data;
    std::memset(&data, 0, sizeof data);
    data.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
    data.id = 9, data.category = 3, data.payloadKind = CUPTI_METRIC_VALUE_KIND_UINT64;
    data.payload.metricValueUint64 = 4096;

    NvtxJoiner nvtx;
    std::vector<TraceEvent> events;
    std::vector<NameRecord> names;
    convert_record(as_activity(start), nvtx, events, names);
    convert_record(as_activity(data), nvtx, events, names);
    EXPECT_TRUE(nvtx.take_ready(false).empty()); // still open
    convert_record(as_activity(mark), nvtx, events, names);
    convert_record(as_activity(end), nvtx, events, names);
    EXPECT_TRUE(events.empty());
    const auto ready = nvtx.take_ready(false);
    ASSERT_EQ(ready.size(), 2u);
    EXPECT_EQ(ready[0].name, "go");
    EXPECT_EQ(ready[0].kind, TraceEventKind::NvtxMark);
    EXPECT_EQ(ready[0].domain, "");
    EXPECT_EQ(ready[1].name, "ncclAllReduce");
    EXPECT_EQ(ready[1].domain, "NCCL");
    EXPECT_EQ(ready[1].start_ns, 100);
    EXPECT_EQ(ready[1].end_ns, 180);
    EXPECT_EQ(ready[1].thread, 555);
    EXPECT_EQ(ready[1].category, "3");
    EXPECT_EQ(ready[1].payload["value"], 4096);
    EXPECT_EQ(nvtx.open_ranges(), 0u);
}

TEST(CuptiRecords, UnclosedRangesComeOutAtTheFinalFlush) {
    NvtxJoiner nvtx;
    nvtx.start(1, "phase", "pkbw", 10, 1);
    nvtx.end(2, 20); // an end whose start predates tracing is ignored
    EXPECT_TRUE(nvtx.take_ready(false).empty());
    const auto last = nvtx.take_ready(true);
    ASSERT_EQ(last.size(), 1u);
    EXPECT_EQ(last[0].payload["unterminated"], true);
    EXPECT_EQ(last[0].end_ns, 10);
}

TEST(CuptiRecords, NamesOfThreadsAndStreams) {
    CUpti_ActivityName n;
    std::memset(&n, 0, sizeof n);
    n.kind = CUPTI_ACTIVITY_KIND_NAME;
    n.objectKind = CUPTI_ACTIVITY_OBJECT_STREAM;
    n.objectId.dcs.streamId = 21;
    n.name = "comm";
    NvtxJoiner nvtx;
    std::vector<TraceEvent> events;
    std::vector<NameRecord> names;
    convert_record(as_activity(n), nvtx, events, names);
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].object, "stream");
    EXPECT_EQ(names[0].id, 21);
    EXPECT_EQ(names[0].name, "comm");
}

} // namespace
} // namespace pkbw::tracer

namespace pkbw::tracer {
namespace {

// A later launch's rank that loaded the tracer once opened the first launch's trace with "wb" and left
// it empty (the reference side of every traced perf run on the H200). The tracer makes its file only
// where none exists, and leaves an existing one as it was.
TEST(CuptiRecords, ATraceFileIsNeverOpenedOverAnExistingOne) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("pkbw_trace_" + std::to_string(::getpid()) + ".jsonl"))
            .string();
    std::filesystem::remove(path);
    std::FILE* first = open_new_trace_file(path);
    ASSERT_NE(first, nullptr);
    std::fputs("{\"events\":220}\n", first);
    std::fclose(first);
    errno = 0;
    EXPECT_EQ(open_new_trace_file(path), nullptr);
    EXPECT_EQ(errno, EEXIST);
    std::ifstream kept(path);
    std::string line;
    std::getline(kept, line);
    EXPECT_EQ(line, "{\"events\":220}") << "the first process's records are untouched";
    std::filesystem::remove(path);
}

} // namespace
} // namespace pkbw::tracer
