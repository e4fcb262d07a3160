// PyTorch profiler chrome traces: PKB's worker writes them with --profile (traces/rank_<r>.json),
// pkbw's PKB Python ranks in their traced pass (trace/rank_<r>.<side>.torch.json). The complete
// ("ph":"X") events in a neutral form, and their conversion into pkbw's trace model (trace.h).
#pragma once

#include "pkbw/core/trace.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw {

struct KinetoEvent {
    std::string name;
    std::string category;      // "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "user_annotation", ...
    std::int64_t start_ns = 0; // baseTimeNanoseconds + ts (the profiler's clock), rounded to ns
    std::int64_t end_ns = 0;
    std::int64_t pid = -1; // numeric pid/tid; -1 when the trace names them with text
    std::int64_t tid = -1;
    std::int64_t stream = -1;      // GPU events: args.stream, else tid
    int device = -1;               // GPU events: args.device, else pid
    std::int64_t correlation = -1; // args.correlation (links a kernel to its launch), -1 if absent
    // The event's args that pkbw reads (correlation, stream, device, grid, block, registers per thread,
    // shared memory, bytes) where they are numbers or arrays of at most 3 numbers; null when none.
    nlohmann::json args = nullptr;

    std::int64_t duration_ns() const { return end_ns - start_ns; }
    // Kernels, copies, memsets and GPU-side annotations.
    bool on_gpu() const;
};

struct KinetoTrace {
    int rank = -1;
    std::string source;
    std::int64_t base_time_ns = 0;              // "baseTimeNanoseconds" (0 when absent)
    nlohmann::json device_properties = nullptr; // "deviceProperties" as written
    std::map<std::string, std::string> names;   // "process:<pid>", "thread:<pid>:<tid>" -> name (ph "M")
    std::vector<KinetoEvent> events;            // ph "X", sorted by start, longer first
    std::size_t other_events = 0;               // flow, instant, counter events not imported
};

// A profiler trace's byte cap: the Python judge keeps the candidate's at most this size too
// (TRACE_LIMIT_BYTES in engine/python/pkbw_pkb_timed_loops.py).
inline constexpr std::uint64_t kProfilerTraceMaxBytes = 512ull << 20;
// JSON values one element of traceEvents may hold, and the top level besides (deviceProperties):
// the parse keeps one element's tree at a time, so these bound its memory with max_events.
inline constexpr std::size_t kKinetoEventMaxValues = 4096;
inline constexpr std::size_t kKinetoHeaderMaxValues = 65536;

// Parses a chrome trace. Strict JSON; every error is a pkbw::FormatError naming `source` and the event
// index. `rank` is stored as given. More than max_events elements of traceEvents, an element over
// kKinetoEventMaxValues, or more than kKinetoHeaderMaxValues outside traceEvents is a FormatError;
// of the top-level keys besides traceEvents only baseTimeNanoseconds and deviceProperties are kept.
KinetoTrace parse_kineto_trace(std::string_view text, const std::string& source, int rank = -1,
                               std::size_t max_events = kTraceFileMaxEvents);
// Reads `path` through read_untrusted_file below its directory (a link at `path` is refused) within
// kProfilerTraceMaxBytes; with rank -1 the rank comes from a file name rank_<r>.json when it has one.
KinetoTrace read_kineto_trace(const std::filesystem::path& path, int rank = -1);

// GPU time per kernel name (sum of durations), for summaries.
struct KinetoKernelTotal {
    std::string name;
    std::int64_t count = 0;
    std::int64_t total_ns = 0;
};
std::vector<KinetoKernelTotal> kineto_kernel_totals(const KinetoTrace& trace); // largest total first

// One side's profile in pkbw's trace model (trace.h), for the store and the timeline: kernels,
// copies and memsets keep their GPU times, stream and launch geometry; user annotations and CPU ops
// become NVTX ranges (domain "torch", category the profiler's); each "ProfilerStep#N" becomes an
// engine range of category "iteration" named "<side>/N" (payload {"side", "iteration"}), and the
// whole profile is wrapped in an engine range of category "phase" named `side` (payload {"side",
// "trial", "source": "torch-profiler"}), so that reference and candidate profiles of one rank can
// share a timeline. Times are the profiler's clock plus `shift_ns` (then in the phase's payload as
// "clock_shift_ns"). Kineto's GPU copy of a step (gpu_user_annotation) stays an NVTX range.
void append_kineto_events(const KinetoTrace& trace, const std::string& side, int trial, RankTrace& out,
                          std::int64_t shift_ns = 0);

// One side's profile of one rank (its rank is trace.rank).
struct SideProfile {
    std::string side; // "reference", "candidate"
    int trial = 0;
    KinetoTrace trace;
};
// The profiles as one RankTrace per rank (sorted by rank), the sides placed end to end: the
// reference keeps its clock, each later side starts a short gap (a fiftieth of the longest profile
// before it, at least 1 us) after the one before ends, its own timing kept. The sides' clocks are
// unrelated where they come from (PKB profiles each side in a launch of its own; pkbw's Python ranks
// profile the two sides in two processes, and torch without Kineto counts from each profile's start),
// so the gap between them means nothing. A side's ranks share one clock when all carry Kineto's
// baseTimeNanoseconds, else each rank's profile starts at the side's start. Every phase range gets
// "placed": "end to end" in its payload.
std::vector<RankTrace> profiles_end_to_end(const std::vector<SideProfile>& profiles);
// Whether `traces` hold sides placed by profiles_end_to_end (their phase ranges say "placed": "end to
// end"), so that the timeline can say the gap between the sides is not a measured one.
bool profiles_placed_end_to_end(const std::vector<RankTrace>& traces);
// The traced pass of pkbw's PKB Python ranks (engine/python, docs/tracing.md): every
// rank_<r>.<side>.torch.json in `dir` and `dir`/candidate, through profiles_end_to_end, read as
// load_trace_directory reads (no link followed below `dir`, kProfilerTraceMaxBytes per file, the
// candidate's files within `budget`). A file that cannot be read is a FormatError naming it; with
// `skipped`, it is left out and its error appended there (the candidate's file comes from the
// candidate's process: it must not cost the reference's).
std::vector<RankTrace> load_profiler_directory(const std::filesystem::path& dir,
                                               std::vector<std::string>* skipped = nullptr,
                                               CandidateTraceBudget* budget = nullptr);

} // namespace pkbw
