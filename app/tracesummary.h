// "Where did the time go": per side and rank, the kernels, copies and NVTX ranges that ran inside
// the traced iterations (engine "iteration" ranges), each with count, total, mean and share of the
// iterations' time, and the side's communication / computation overlap as HTA computes it (the share
// of communication time during which computation also ran), with its idle time. Communication is not
// only NCCL: a candidate that replaces NCCL with its own peer-memory kernel (the usual LLM candidate)
// communicates too (is_communication). Qt-free.
#pragma once

#include "pkbw/core/trace.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pkbw::app {

// Whether an event counts as communication in the overlap: an NCCL kernel, a peer-to-peer copy
// (copy kind PtoP), a kernel the tracer saw given a pointer into a peer's memory (peer_memory), a
// kernel whose name says it works across GPUs (peer, p2p, ipc, symmetric memory,
// multimem, nvshmem, or a collective's name: allreduce, all_gather, reduce_scatter, alltoall,
// broadcast), or a kernel the user marked (its display name in `marked`).
// `nccl_issued`: correlation ids of the CUDA calls NCCL made (nccl_issued_calls): what they started
// on the device is the collective's work, whatever it is.
bool is_communication(const TraceEvent& event, const std::set<std::string>& marked = {},
                      const std::set<std::int64_t>& nccl_issued = {});
// Why: "NCCL", "issued by NCCL", "peer copy", "touches peer memory", "name", "marked by you",
// "collective (torch annotation)", or "" when it is not communication.
// A torch profiler's GPU annotation of a c10d collective ("nccl:all_reduce", "nccl:_all_gather_base":
// category gpu_user_annotation) spans the collective's device work, whatever its kernels or copies are
// called (at one rank NCCL's all-gather is a device-to-device copy): the overlap counts its span as
// communication.
bool is_collective_annotation(const TraceEvent& event);
std::string communication_reason(const TraceEvent& event, const std::set<std::string>& marked = {},
                                 const std::set<std::int64_t>& nccl_issued = {});
// The correlation ids of a native trace's CUDA API calls made inside an NCCL call (an NVTX range of
// domain "NCCL" on the same host thread): the device work they start is NCCL's. At one rank NCCL's
// all-gather is a cudaMemcpyAsync of the input into the output, a device-to-device copy that no name
// marks as communication (the H200's reference of problem 12 read "no communication").
std::set<std::int64_t> nccl_issued_calls(const RankTrace& trace);

struct TraceSummaryRow {
    std::string side; // "reference", "candidate", or "trace" when no iteration ranges exist
    int rank = 0;
    std::string kind; // "kernel", "memcpy", "memset", "nvtx"; a torch-profiler event's track in lower
                      // case: "cpu", "cuda runtime", "gpu annotation"
    std::string name;
    std::int64_t count = 0;
    double total_us = 0, mean_us = 0;
    double percent_of_iteration = 0; // total / the side's iteration time on that rank
    std::string communication;       // communication_reason of its events ("" when computation)
};

struct SideOverlap {
    std::string side;
    int rank = 0;
    int iterations = 0;
    double iteration_us = 0; // summed iteration (window) time
    double compute_us = 0, communication_us = 0, overlap_us = 0;
    double overlap_percent = 0; // overlap / communication, 0 without communication
    // Idle accounting (HTA's idle time): the GPU busy with nothing (no kernel, copy or memset) within
    // the iterations, and how long after this rank ended each iteration the last rank ended it
    // (waiting for peers: what the slowest rank costs this one).
    double idle_us = 0;
    double waiting_for_peers_us = 0;
    // The share of the iterations' time the GPU was busy (100 x (1 - idle / iteration time)), and
    // each iteration's share in time order: a side whose host syncs and small copies leave the GPU
    // busy 15% of its iteration says so, where the kernels' rows each read a few percent.
    double busy_percent = 0;
    std::vector<double> busy_percent_by_iteration;
};

struct TraceSummary {
    std::vector<TraceSummaryRow> rows; // by side, rank, then total descending
    std::vector<SideOverlap> overlaps; // by side, rank
};

// Over the iterations that intersect `window_ns` (clipped to it), or all of them when absent; a trace
// without iteration ranges over its engine "phase" ranges that name a side (payload "side": import-pkb's
// torch-profiler profiles, which hold no ProfilerStep#N), else over the window (or its whole span) as
// side "trace".
// An event counts in the iteration in which it starts: at its full length without a window, and with
// one at its part inside the window (an event that began earlier in the iteration, or ends after the
// window, is clipped to it). pkbw's own NVTX ranges (domain "pkbw") are the engine's ranges seen again
// by CUPTI and are left out.
TraceSummary summarize_trace(const std::vector<RankTrace>& traces,
                             std::optional<std::pair<std::int64_t, std::int64_t>> window_ns = std::nullopt,
                             const std::set<std::string>& communication_marks = {});

} // namespace pkbw::app
