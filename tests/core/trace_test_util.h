// Builders for synthetic trace events shared by the trace tests.
#pragma once

#include "pkbw/core/trace.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace pkbw::testing {

inline TraceEvent kernel(std::string name, std::int64_t start, std::int64_t end, std::int64_t stream = 7,
                         int device = 0) {
    TraceEvent e;
    e.kind = TraceEventKind::Kernel;
    e.name = std::move(name);
    e.start_ns = start;
    e.end_ns = end;
    e.stream = stream;
    e.device = device;
    e.grid = {4, 1, 1};
    e.block = {256, 1, 1};
    e.registers = 32;
    return e;
}

inline TraceEvent copy(TraceEventKind kind, std::int64_t start, std::int64_t end, std::int64_t bytes) {
    TraceEvent e;
    e.kind = kind;
    e.name = kind == TraceEventKind::Memcpy ? "memcpy HtoD" : "memset";
    e.start_ns = start;
    e.end_ns = end;
    e.stream = 7;
    e.device = 0;
    e.bytes = bytes;
    if (kind == TraceEventKind::Memcpy) {
        e.copy_kind = "HtoD";
    }
    return e;
}

inline TraceEvent range(TraceEventKind kind, std::string category, std::string name, std::int64_t start,
                        std::int64_t end, std::string domain = "pkbw") {
    TraceEvent e;
    e.kind = kind;
    e.category = std::move(category);
    e.name = std::move(name);
    e.start_ns = start;
    e.end_ns = end;
    e.domain = std::move(domain);
    e.thread = 100;
    return e;
}

// Two ranks with nested engine ranges, a mark, NVTX, a partial overlap on one stream, a copy.
inline std::vector<RankTrace> chrome_sample() {
    RankTrace r0, r1;
    r0.rank = 0;
    r1.rank = 1;
    r0.dropped_records = 2;
    r0.events = {
        range(TraceEventKind::EngineRange, "phase", "perf", 1'000'000, 1'010'000),
        range(TraceEventKind::EngineRange, "iteration", "it0", 1'001'000, 1'004'000),
        range(TraceEventKind::EngineRange, "iteration", "it1", 1'004'000, 1'008'000), // abuts it0
        range(TraceEventKind::NvtxMark, "note", "go", 1'001'500, 1'001'500),
        range(TraceEventKind::NvtxRange, "", "ncclAllReduce", 1'001'100, 1'001'300, "NCCL"),
        kernel("gemm", 1'002'000, 1'003'000, 7),
        kernel("late", 1'002'500, 1'003'500, 7), // partial overlap on stream 7 -> second lane
        kernel("gemm", 1'003'600, 1'003'700, 7),
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1'002'000, 1'002'800, 9),
        copy(TraceEventKind::Memcpy, 1'000'500, 1'000'750, 4096),
    };
    r1.events = {kernel("gemm", 1'000'250, 1'001'250, 7, 1)};
    sort_events(r0.events);
    return {r0, r1};
}

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
public:
    TempDir() {
        path_ = std::filesystem::temp_directory_path() /
                ("pkbw_trace_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path write(const std::string& name, const std::string& text) const {
        std::ofstream(path_ / name, std::ios::binary) << text;
        return path_ / name;
    }

private:
    static int& counter() {
        static int n = 0;
        return n;
    }
    std::filesystem::path path_;
};

} // namespace pkbw::testing
