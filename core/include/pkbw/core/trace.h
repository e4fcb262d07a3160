// Per-rank execution traces: GPU activity recorded by the CUPTI tracer (engine/tracer/) and host
// ranges recorded by the rank runtime (TraceRecorder), in one model and one file format
// (docs/tracing.md). Every timestamp is CLOCK_MONOTONIC nanoseconds, so the traces of all ranks on
// one machine share a time base.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw {

inline constexpr int kTraceFormatVersion = 1;
inline constexpr const char* kTraceFormatName = "pkbw-trace";
inline constexpr const char* kTraceClock = "CLOCK_MONOTONIC";

enum class TraceEventKind { Kernel, Memcpy, Memset, Sync, NvtxRange, NvtxMark, EngineRange };

std::string_view to_string(TraceEventKind kind);
// Throws FormatError naming `where` for an unknown kind.
TraceEventKind trace_event_kind_from_string(std::string_view text, const std::string& where);

// True for the kinds that occupy a GPU engine (kernels, copies, memsets).
bool is_gpu_activity(TraceEventKind kind);

struct TraceEvent {
    TraceEventKind kind = TraceEventKind::Kernel;
    std::string name;      // kernel (mangled) name, memcpy kind, NVTX message, engine range name
    std::string demangled; // empty when the name is not mangled
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0; // == start_ns for marks
    std::int64_t stream = -1;
    int device = -1;
    std::int64_t correlation_id = 0;
    std::int64_t thread = 0; // host thread of NVTX and engine events (0: unknown)
    std::array<int, 3> grid{0, 0, 0};
    std::array<int, 3> block{0, 0, 0};
    int registers = 0;
    std::int64_t shared_memory = 0; // static + dynamic bytes per block
    std::int64_t bytes = 0;         // memcpy / memset size
    std::string copy_kind;          // "HtoD", "DtoH", "DtoD", "PtoP", ...
    int src_device = -1;
    int dst_device = -1;
    std::string domain;     // NVTX domain ("NCCL", "pkbw", "" for the default domain)
    std::string category;   // NVTX / engine category ("phase", "iteration", ...)
    nlohmann::json payload; // null when none
    // A kernel the tracer saw given a pointer into another GPU's memory at its launch (a peer's
    // symmetric buffer or the table of their addresses): communication by its own kernel.
    bool peer_memory = false;

    std::int64_t duration_ns() const { return end_ns - start_ns; }
    // The demangled name when there is one, else the name.
    const std::string& display_name() const { return demangled.empty() ? name : demangled; }
    bool operator==(const TraceEvent&) const = default;
};

// One rank's trace, possibly merged from several files (the engine's host file and CUPTI's).
struct RankTrace {
    int rank = 0;
    std::int64_t pid = 0;
    std::string source;                       // "engine", "cupti", or "a+b" after a merge
    std::uint64_t dropped_records = 0;        // records CUPTI could not store
    bool complete = true;                     // false when a file had no end line (the writer died)
    std::map<std::string, std::string> names; // "thread:<tid>" / "stream:<id>" -> user name
    std::vector<TraceEvent> events;           // sorted by start_ns, then longer first
};

// --- File format ---------------------------------------------------------------------------------
// JSON lines: a header {"format":"pkbw-trace","version":1,"rank":R,"pid":P,"source":S,"clock":...},
// then events {"kind":...}, name records {"meta":"name","object":"thread"|"stream","id":N,"name":S},
// then one end line {"end":true,"events":N,"dropped_records":D}.

nlohmann::json trace_header_json(int rank, std::int64_t pid, std::string_view source);
nlohmann::json to_json(const TraceEvent& event);
// `where` names the file and line for error messages.
TraceEvent trace_event_from_json(const nlohmann::json& json, const std::string& where);

// --- Reading trace files (docs/tracing.md, "What the launcher reads, and what a bad file costs") ---
// The candidate's process writes trace files of its own (candidate/ in the trace directory): every
// trace file is read as untrusted input (untrusted_file.h), within these caps.
inline constexpr std::uint64_t kEngineTraceMaxBytes = 64ull << 20; // a rank's ranges: kilobytes in practice
inline constexpr std::uint64_t kCuptiTraceMaxBytes = 256ull << 20; // about a million records
inline constexpr std::size_t kTraceFileMaxEvents = 1'000'000;      // events (and name records) per file
inline constexpr std::size_t kTraceLineMaxBytes = 1u << 20;        // one JSON line
// Byte cap of a trace file by its name (rank_<r>.engine.jsonl, rank_<r>.cupti.jsonl; the larger for others).
std::uint64_t trace_file_max_bytes(std::string_view name);

// What the candidate's folder may cost the launcher altogether, over every file of it that the
// trace and profiler loaders read (they take one budget between them).
struct CandidateTraceBudget {
    std::uint64_t bytes = 1ull << 30;
    std::size_t events = 2'000'000;
    std::size_t files = 256;
};

// Parses one file's text strictly: every error names `file` and the line. A file without an end line
// (the writer crashed) is read with complete = false; a final line cut short is dropped the same way.
// More than max_events lines of events and names, or a line over kTraceLineMaxBytes, is a FormatError.
RankTrace parse_trace_text(std::string_view text, const std::string& file,
                           std::size_t max_events = kTraceFileMaxEvents);
// Reads `path` as parse_trace_text parses it, through read_untrusted_file below its directory (a link
// at `path` is refused) and within trace_file_max_bytes. Errors are FormatErrors naming the file.
RankTrace load_trace_file(const std::filesystem::path& path);
// Writes a whole trace in the file format (tests, re-export).
void save_trace_file(const RankTrace& trace, const std::filesystem::path& path);

// Merges the traces of one rank: events interleaved by time, dropped counts summed. NVTX events in
// the "pkbw" domain from non-engine parts (CUPTI's view of engine_nvtx.h ranges) are dropped when an
// engine part is present: they are the engine's own ranges seen twice.
RankTrace merge_rank_traces(const std::vector<RankTrace>& parts);
// Reads every rank_<r>.engine.jsonl and rank_<r>.cupti.jsonl in `dir` (the judges') and in
// `dir`/candidate (the candidates' processes'), and merges by rank, each rank's judge files first;
// sorted by rank. `dir` is the caller's; nothing below it is followed if it is a link. A file that
// cannot be read (a link, not a regular file, over its cap, the budget spent) or parsed is a
// FormatError naming it; with `skipped`, it is left out and its reason appended there, and the other
// files are kept. The candidate's files draw on `budget` (a fresh one when null).
std::vector<RankTrace> load_trace_directory(const std::filesystem::path& dir,
                                            std::vector<std::string>* skipped = nullptr,
                                            CandidateTraceBudget* budget = nullptr);

void sort_events(std::vector<TraceEvent>& events);

// --- Host recorder -------------------------------------------------------------------------------

// Host monotonic time in nanoseconds (the traces' time base).
std::int64_t trace_now_ns();

// Records the rank's own phases and iterations as engine_range / nvtx_mark events in the trace file
// format. Thread-safe; ranges nest per thread (end_range closes the calling thread's innermost range).
class TraceRecorder {
public:
    // Opens (truncates) `path` and writes the header. Throws Error naming the path if it cannot.
    TraceRecorder(const std::filesystem::path& path, int rank, std::string source = "engine");
    // Closes ranges still open (payload {"unterminated":true}) and writes the end line.
    ~TraceRecorder();
    TraceRecorder(const TraceRecorder&) = delete;
    TraceRecorder& operator=(const TraceRecorder&) = delete;

    void begin_range(std::string_view category, std::string_view name, nlohmann::json payload = nullptr);
    // Throws Error when the calling thread has no open range.
    void end_range();
    void mark(std::string_view category, std::string_view name, nlohmann::json payload = nullptr);
    // Lines are written (line-buffered) as each range ends or mark is made, so a killed rank loses
    // only its open ranges; flush() is kept for callers that want an explicit point.
    void flush();

    std::size_t events_written() const;
    const std::filesystem::path& path() const { return path_; }

    // RAII range; a null recorder makes it a no-op (tracing off).
    class Scope {
    public:
        Scope(TraceRecorder* recorder, std::string_view category, std::string_view name,
              nlohmann::json payload = nullptr);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        TraceRecorder* recorder_;
    };

private:
    struct Open {
        std::string category, name;
        nlohmann::json payload;
        std::int64_t start_ns;
    };
    void write_locked(const nlohmann::json& line);
    void close_locked(Open open, std::int64_t thread, std::int64_t end_ns, bool unterminated);

    std::filesystem::path path_;
    mutable std::mutex mutex_;
    std::FILE* file_ = nullptr;
    std::map<std::int64_t, std::vector<Open>> open_; // per host thread
    std::size_t events_ = 0;
};

} // namespace pkbw
