// The trace directory's files as the loaders read them (trace_directory.cpp): the judges' folder and
// the candidate's, each file through read_untrusted_file, the candidate's within one budget.
#pragma once

#include "pkbw/core/trace.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw::detail {

struct TraceFileRef {
    std::string relative; // below the trace directory: "rank_0.engine.jsonl", "candidate/rank_0.engine.jsonl"
    std::string name;     // the file name alone
    std::string shown;    // the whole path, for messages
    bool candidate = false;
};

// Parses one file's bytes (throwing FormatError naming file.shown) within max_events and returns how
// many events it kept.
using TakeTraceFile =
    std::function<std::size_t(const TraceFileRef& file, std::string_view bytes, std::size_t max_events)>;

// Hands every file of `dir` and then of `dir`/candidate whose name matches `pattern` (each folder in
// name order) to `take`, its bytes read with read_untrusted_file within max_bytes(name), and for the
// candidate's also within `budget`. A file that cannot be read or parsed throws FormatError, or with
// `skipped` is left out and its reason appended. The judges' folder that cannot be listed throws Error.
void read_trace_files(const std::filesystem::path& dir, const std::regex& pattern,
                      const std::function<std::uint64_t(std::string_view)>& max_bytes,
                      std::vector<std::string>* skipped, CandidateTraceBudget& budget,
                      const TakeTraceFile& take);

} // namespace pkbw::detail
