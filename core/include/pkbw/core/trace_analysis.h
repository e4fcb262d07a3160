// Timeline analyses over per-rank traces (docs/tracing.md, "Analyses"): where a rank's GPU time went,
// how much communication overlapped compute, which rank ended each iteration last, per-kernel
// statistics and NCCL bus bandwidth.
#pragma once

#include "pkbw/core/trace.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pkbw {

struct TimeWindow {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::int64_t length() const { return end_ns - start_ns; }
};

// NCCL's device kernels: ncclDevKernel_* (NCCL >= 2.19) and ncclKernel* (older); either name form.
bool is_nccl_kernel(const TraceEvent& event);

// The span from the first event's start to the last event's end (GPU activity and engine ranges).
TimeWindow trace_span(const RankTrace& trace);

// Time in a window, each category a union of intervals clipped to the window (so concurrent kernels
// on two streams count once). compute + comm - overlap + copies - ... is not a partition; busy is the
// union of all three and idle = window - busy.
struct TimeBreakdown {
    int rank = 0;
    TimeWindow window;
    std::int64_t compute_ns = 0;       // non-NCCL kernels
    std::int64_t communication_ns = 0; // NCCL kernels
    std::int64_t copy_ns = 0;          // memcpy + memset
    std::int64_t overlap_ns = 0;       // compute ∩ communication
    std::int64_t busy_ns = 0;          // compute ∪ communication ∪ copies
    std::int64_t idle_ns = 0;          // window - busy
    // Share of communication hidden under compute (0 when there is no communication).
    double overlap_fraction() const {
        return communication_ns > 0 ? static_cast<double>(overlap_ns) / communication_ns : 0.0;
    }
};

TimeBreakdown time_breakdown(const RankTrace& trace, TimeWindow window);

// Iterations are engine_range events of one category (default "iteration"); the same name on every
// rank identifies the same iteration. The runtime ends each iteration range after synchronizing its
// stream, so a range's end is when that rank's GPU work for the iteration finished.
struct IterationStraggler {
    std::string iteration; // range name
    int ranks = 0;         // ranks that recorded the iteration
    int last_rank = -1;    // the rank that ended last (lowest rank on ties)
    std::int64_t last_end_ns = 0;
    std::int64_t lag_ns = 0;                 // last end - first end across ranks
    std::int64_t lag_vs_next_ns = 0;         // last end - second-to-last end (0 with one rank)
    std::int64_t start_spread_ns = 0;        // last start - first start
    std::map<int, std::int64_t> duration_ns; // per rank
};

// Sorted by the iterations' earliest start.
std::vector<IterationStraggler> iteration_stragglers(const std::vector<RankTrace>& traces,
                                                     const std::string& category = "iteration");

struct KernelStats {
    std::string name; // display name (demangled when available)
    std::int64_t count = 0;
    std::int64_t total_ns = 0;
    double mean_ns = 0;
    std::int64_t p95_ns = 0; // nearest rank: the ceil(0.95 n)-th smallest duration
    std::int64_t min_ns = 0;
    std::int64_t max_ns = 0;
};

// Over all given traces (pass one trace for a per-rank summary); sorted by total time, descending,
// then by name. An optional window keeps kernels that start inside it.
std::vector<KernelStats> kernel_summary(const std::vector<RankTrace>& traces,
                                        std::optional<TimeWindow> window = std::nullopt);

// NCCL collective of a kernel name: "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce",
// "SendRecv" (also Send/Recv, all-to-all), or "" when not an NCCL kernel or unknown.
std::string nccl_collective(const std::string& kernel_name);

// nccl-tests' bus bandwidth factor for `collective` on n ranks: AllReduce 2(n-1)/n; AllGather,
// ReduceScatter, AlltoAll (n-1)/n; Broadcast, Reduce, SendRecv 1.
double busbw_factor(const std::string& collective, int world_size);

// Message sizes when the trace does not carry them: bytes per collective call, keyed by collective
// ("AllReduce", ...), "*" matching any. Sizes follow nccl-tests: AllReduce/Broadcast/Reduce the
// buffer, AllGather the gathered output, ReduceScatter the full input.
struct CommWorkModel {
    std::map<std::string, std::int64_t> bytes_per_call;
    std::optional<std::int64_t> bytes_for(const std::string& collective) const;
};

struct CollectiveBandwidth {
    int rank = 0;
    std::string collective;
    std::string kernel;
    std::int64_t start_ns = 0;
    std::int64_t duration_ns = 0;
    std::int64_t bytes = 0;   // 0 when unknown
    std::string bytes_source; // "nvtx", "work_model" or "" (unknown)
    double algbw_gbps = 0;    // bytes / duration, GB = 1e9 bytes
    double busbw_gbps = 0;    // algbw * busbw_factor
};

// One entry per NCCL kernel. Sizes come first from NCCL's NVTX ranges (domain "NCCL") whose payload
// holds "bytes", or "count" and "datatype_size" (the k-th range of a collective pairs with the k-th
// kernel of that collective), else from `model`.
std::vector<CollectiveBandwidth> nccl_bandwidth(const RankTrace& trace, int world_size,
                                                const CommWorkModel& model = {});

// The NCCL kernels one side launched in its traced iterations (engine "iteration" ranges whose payload
// has "side": `side`), on one rank. What ran, not what the library imports: a collective reached
// through dlsym, or through a communicator the candidate made itself, shows here too.
struct SideNcclKernels {
    int rank = 0;
    std::int64_t launches = 0;
    std::vector<std::string> collectives; // distinct, first-seen order ("AllReduce", or the kernel name)
};

// One entry per rank whose `side` launched at least one NCCL kernel; kernels count when they start
// inside one of the side's iteration ranges (each range ends after the device synchronised).
std::vector<SideNcclKernels> nccl_kernels_in_side(const std::vector<RankTrace>& traces,
                                                  std::string_view side);

} // namespace pkbw
