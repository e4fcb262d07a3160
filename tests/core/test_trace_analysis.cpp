// Timeline analyses on synthetic traces; every expected value is worked out by hand in the comments.
#include "pkbw/core/trace_analysis.h"
#include "trace_test_util.h"

#include <gtest/gtest.h>

namespace pkbw {
namespace {

using namespace pkbw::testing;

const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";

RankTrace breakdown_trace() {
    RankTrace t;
    t.rank = 0;
    t.events = {
        kernel("gemm", 100, 300, 1),     // compute
        kernel("gemm", 200, 400, 2),     // concurrent compute: union [100,400] = 300
        kernel(kAllReduce, 350, 600, 3), // comm 250; overlap with compute [350,400] = 50
        copy(TraceEventKind::Memcpy, 700, 800, 64),
        copy(TraceEventKind::Memset, 790, 850, 64),                   // copies union [700,850] = 150
        range(TraceEventKind::EngineRange, "phase", "perf", 0, 1000), // host ranges are not GPU time
    };
    sort_events(t.events);
    return t;
}

TEST(TraceAnalysis, NcclKernelsAreRecognisedByEitherName) {
    EXPECT_TRUE(is_nccl_kernel(kernel(kAllReduce, 0, 1)));
    EXPECT_TRUE(is_nccl_kernel(kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t", 0, 1)));
    auto demangled = kernel("_Z24ncclDevKernel_SendRecvv", 0, 1);
    demangled.demangled = "ncclDevKernel_SendRecv()";
    EXPECT_TRUE(is_nccl_kernel(demangled));
    EXPECT_FALSE(is_nccl_kernel(kernel("my_allreduce", 0, 1)));
    EXPECT_FALSE(is_nccl_kernel(range(TraceEventKind::NvtxRange, "", "ncclKernel", 0, 1, "NCCL")));
}

TraceEvent iteration(const std::string& side, int i, std::int64_t start, std::int64_t end) {
    TraceEvent e =
        range(TraceEventKind::EngineRange, "iteration", side + "/" + std::to_string(i), start, end);
    e.payload = {{"iteration", i}, {"side", side}};
    return e;
}

TEST(TraceAnalysis, NcclKernelsInTheCandidatesIterationsOnly) {
    RankTrace r0, r1, r2;
    r0.rank = 0;
    r0.events = {
        iteration("reference", 0, 0, 100),
        kernel(kAllReduce, 10, 90), // the reference's own collective: not counted
        iteration("candidate", 0, 200, 300),
        kernel("my_allreduce_kernel", 210, 290), // a custom kernel: not NCCL
        iteration("candidate", 1, 400, 500),
        kernel(kAllReduce, 410, 480),                        // counted
        kernel("ncclDevKernel_AllGather_RING_LL", 480, 490), // counted, starts inside
        kernel(kAllReduce, 420, 470, 8),                     // a second launch of the same collective
        kernel("ncclDevKernel_SendRecv", 600, 700),          // after every iteration: not counted
    };
    r1.rank = 1;
    r1.events = {iteration("candidate", 0, 200, 300), kernel("my_allreduce_kernel", 210, 290)};
    r2.rank = 2;
    r2.events = {iteration("candidate", 0, 200, 300), kernel("ncclKernel_legacy_name", 300, 310)};
    for (auto* t : {&r0, &r1, &r2}) {
        sort_events(t->events);
    }
    const auto found = nccl_kernels_in_side({r0, r1, r2}, "candidate");
    ASSERT_EQ(found.size(), 2u); // rank 1 ran only its own kernel
    EXPECT_EQ(found[0].rank, 0);
    EXPECT_EQ(found[0].launches, 3);
    EXPECT_EQ(found[0].collectives, (std::vector<std::string>{"AllReduce", "AllGather"}));
    EXPECT_EQ(found[1].rank, 2);
    EXPECT_EQ(found[1].launches, 1); // starts at the range's end (the synchronise that ends it)
    EXPECT_EQ(found[1].collectives, (std::vector<std::string>{"ncclKernel_legacy_name"}));

    const auto reference = nccl_kernels_in_side({r0, r1, r2}, "reference");
    ASSERT_EQ(reference.size(), 1u);
    EXPECT_EQ(reference[0].launches, 1);
    EXPECT_TRUE(nccl_kernels_in_side({r1}, "candidate").empty());
}

TEST(TraceAnalysis, BreakdownOverTheWholeWindow) {
    const auto b = time_breakdown(breakdown_trace(), {0, 1000});
    EXPECT_EQ(b.compute_ns, 300);
    EXPECT_EQ(b.communication_ns, 250);
    EXPECT_EQ(b.overlap_ns, 50);
    EXPECT_EQ(b.copy_ns, 150);
    EXPECT_EQ(b.busy_ns, 650); // [100,600] + [700,850]
    EXPECT_EQ(b.idle_ns, 350);
    EXPECT_DOUBLE_EQ(b.overlap_fraction(), 0.2);
}

TEST(TraceAnalysis, BreakdownClipsToTheWindow) {
    const auto b = time_breakdown(breakdown_trace(), {150, 750});
    EXPECT_EQ(b.compute_ns, 250);       // [150,400]
    EXPECT_EQ(b.communication_ns, 250); // [350,600]
    EXPECT_EQ(b.overlap_ns, 50);
    EXPECT_EQ(b.copy_ns, 50);  // [700,750]
    EXPECT_EQ(b.busy_ns, 500); // [150,600] + [700,750]
    EXPECT_EQ(b.idle_ns, 100);
}

TEST(TraceAnalysis, SpanCoversAllEvents) {
    const auto w = trace_span(breakdown_trace());
    EXPECT_EQ(w.start_ns, 0);
    EXPECT_EQ(w.end_ns, 1000);
    EXPECT_EQ(trace_span(RankTrace{}).length(), 0);
}

std::vector<RankTrace> iteration_traces() {
    std::vector<RankTrace> traces(3);
    // iter 0: ends 100, 130, 120 -> rank 1 last by 30 over the first, 10 over the next; starts 0,10,5.
    // iter 1: ends 350, 300, 350 -> tie: rank 0 (lowest); lag 50; lag vs next 0; starts 200,200,210.
    const std::int64_t spans[3][2][2] = {
        {{0, 100}, {200, 350}}, {{10, 130}, {200, 300}}, {{5, 120}, {210, 350}}};
    for (int r = 0; r < 3; ++r) {
        traces[r].rank = r;
        for (int i = 1; i >= 0; --i) {
            traces[r].events.push_back(range(TraceEventKind::EngineRange, "iteration",
                                             "iter " + std::to_string(i), spans[r][i][0], spans[r][i][1]));
        }
        traces[r].events.push_back(range(TraceEventKind::EngineRange, "phase", "perf", 0, 400));
    }
    return traces;
}

TEST(TraceAnalysis, StragglerPerIteration) {
    const auto s = iteration_stragglers(iteration_traces());
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].iteration, "iter 0");
    EXPECT_EQ(s[0].ranks, 3);
    EXPECT_EQ(s[0].last_rank, 1);
    EXPECT_EQ(s[0].last_end_ns, 130);
    EXPECT_EQ(s[0].lag_ns, 30);
    EXPECT_EQ(s[0].lag_vs_next_ns, 10);
    EXPECT_EQ(s[0].start_spread_ns, 10);
    EXPECT_EQ(s[0].duration_ns.at(2), 115);

    EXPECT_EQ(s[1].iteration, "iter 1");
    EXPECT_EQ(s[1].last_rank, 0);
    EXPECT_EQ(s[1].lag_ns, 50);
    EXPECT_EQ(s[1].lag_vs_next_ns, 0);
    EXPECT_EQ(s[1].start_spread_ns, 10);

    EXPECT_TRUE(iteration_stragglers(iteration_traces(), "trial").empty());
    const auto phases = iteration_stragglers(iteration_traces(), "phase");
    ASSERT_EQ(phases.size(), 1u);
    EXPECT_EQ(phases[0].lag_ns, 0);
}

TEST(TraceAnalysis, KernelSummaryCountsTotalsAndNearestRankP95) {
    RankTrace a, b;
    a.rank = 0;
    b.rank = 1;
    std::int64_t t = 0;
    for (int d = 1; d <= 20; ++d) { // durations 1..20 split over two ranks: total 210, mean 10.5
        (d % 2 ? a : b).events.push_back(kernel("small", t, t + d));
        t += 100;
    }
    auto big = kernel("_Z3bigv", 5000, 5500);
    big.demangled = "big()";
    a.events.push_back(big);
    const auto s = kernel_summary({a, b});
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].name, "big()"); // 500 total beats 210
    EXPECT_EQ(s[0].count, 1);
    EXPECT_EQ(s[0].p95_ns, 500);
    EXPECT_EQ(s[1].name, "small");
    EXPECT_EQ(s[1].count, 20);
    EXPECT_EQ(s[1].total_ns, 210);
    EXPECT_DOUBLE_EQ(s[1].mean_ns, 10.5);
    EXPECT_EQ(s[1].p95_ns, 19); // ceil(0.95 * 20) = 19th smallest
    EXPECT_EQ(s[1].min_ns, 1);
    EXPECT_EQ(s[1].max_ns, 20);

    // Window [0, 1000) keeps the kernels starting at 0..900: durations 1..10 -> total 55, p95 = 10th.
    const auto w = kernel_summary({a, b}, TimeWindow{0, 1000});
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].total_ns, 55);
    EXPECT_EQ(w[0].p95_ns, 10);
}

TEST(TraceAnalysis, CollectiveNamesAndBusBandwidthFactors) {
    EXPECT_EQ(nccl_collective(kAllReduce), "AllReduce");
    EXPECT_EQ(nccl_collective("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), "ReduceScatter");
    EXPECT_EQ(nccl_collective("ncclDevKernel_Reduce_Sum_f32_RING_LL"), "Reduce");
    EXPECT_EQ(nccl_collective("ncclDevKernel_SendRecv"), "SendRecv");
    EXPECT_EQ(nccl_collective("ncclKernel_AllGather_RING_LL_Sum_int8_t"), "AllGather");
    EXPECT_EQ(nccl_collective("ncclDevKernel_Broadcast_RING_LL"), "Broadcast");
    EXPECT_EQ(nccl_collective("gemm"), "");
    EXPECT_DOUBLE_EQ(busbw_factor("AllReduce", 8), 1.75);
    EXPECT_DOUBLE_EQ(busbw_factor("AllGather", 4), 0.75);
    EXPECT_DOUBLE_EQ(busbw_factor("ReduceScatter", 2), 0.5);
    EXPECT_DOUBLE_EQ(busbw_factor("Broadcast", 8), 1.0);
    EXPECT_DOUBLE_EQ(busbw_factor("Mystery", 8), 0.0);
}

TEST(TraceAnalysis, BusBandwidthFromNvtxPayloadsThenTheWorkModel) {
    RankTrace t;
    t.rank = 2;
    auto gather_range = range(TraceEventKind::NvtxRange, "", "ncclAllGather", 0, 10, "NCCL");
    gather_range.payload = {{"count", 1000}, {"datatype_size", 2}}; // per rank: 1000 x 2 B x 4 ranks = 8000 B
    t.events = {
        gather_range,
        kernel("ncclDevKernel_AllGather_RING_LL", 100, 4100), // 8000 B / 4000 ns = 2 GB/s; bus 1.5
        kernel(kAllReduce, 10'000, 1'010'000),                // 1e6 B / 1 ms = 1 GB/s; bus 1.5
        kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING", 2'000'000, 2'000'500), // size unknown
        kernel("gemm", 0, 50),
    };
    CommWorkModel model;
    model.bytes_per_call["AllReduce"] = 1'000'000;
    const auto bw = nccl_bandwidth(t, 4, model);
    ASSERT_EQ(bw.size(), 3u);
    EXPECT_EQ(bw[0].collective, "AllGather");
    EXPECT_EQ(bw[0].rank, 2);
    EXPECT_EQ(bw[0].bytes, 8000);
    EXPECT_EQ(bw[0].bytes_source, "nvtx");
    EXPECT_DOUBLE_EQ(bw[0].algbw_gbps, 2.0);
    EXPECT_DOUBLE_EQ(bw[0].busbw_gbps, 1.5);
    EXPECT_EQ(bw[1].collective, "AllReduce");
    EXPECT_EQ(bw[1].bytes_source, "work_model");
    EXPECT_DOUBLE_EQ(bw[1].algbw_gbps, 1.0);
    EXPECT_DOUBLE_EQ(bw[1].busbw_gbps, 1.5);
    EXPECT_EQ(bw[2].collective, "ReduceScatter");
    EXPECT_EQ(bw[2].bytes, 0);
    EXPECT_EQ(bw[2].bytes_source, "");
    EXPECT_DOUBLE_EQ(bw[2].busbw_gbps, 0.0);

    model.bytes_per_call["*"] = 500;
    EXPECT_DOUBLE_EQ(nccl_bandwidth(t, 4, model)[2].algbw_gbps, 1.0); // 500 B / 500 ns
}

} // namespace
} // namespace pkbw
