// Reading a trace directory: the judges' files and the candidates' (docs/tracing.md, "What the
// launcher reads, and what a bad file costs"). The candidate's process writes candidate/: whatever is
// there is read as untrusted input and costs only itself.
#include "pkbw/core/error.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/trace.h"
#include "pkbw/core/untrusted_file.h"
#include "trace_files.h"

#include <algorithm>
#include <map>

namespace pkbw {
namespace detail {
namespace {

// The judges write a handful of files per rank: more than this is not a trace directory of theirs.
constexpr std::size_t kJudgeFolderMaxFiles = 4096;

} // namespace

void read_trace_files(const std::filesystem::path& dir, const std::regex& pattern,
                      const std::function<std::uint64_t(std::string_view)>& max_bytes,
                      std::vector<std::string>* skipped, CandidateTraceBudget& budget,
                      const TakeTraceFile& take) {
    const auto leave_out = [&](const std::string& why) {
        if (skipped == nullptr) {
            throw FormatError(why);
        }
        skipped->push_back(why);
    };
    const auto wanted = [&](std::string_view name) {
        return std::regex_match(name.begin(), name.end(), pattern);
    };
    for (const bool candidate : {false, true}) {
        const std::string folder = candidate ? std::string(run_layout::kCandidateTraceDir) : "";
        const auto listing =
            list_untrusted_directory(dir, folder, wanted, candidate ? budget.files : kJudgeFolderMaxFiles);
        if (!listing.ok() && listing.missing) {
            continue; // no folder, no traces
        }
        if (!listing.ok() && !candidate) {
            throw Error(listing.error + " (cannot list the trace directory)");
        }
        if (!listing.ok()) { // a link in its place, say: refused, and nothing of it read
            leave_out(listing.error + " (the candidate's trace folder: none of its files read)");
            continue;
        }
        if (listing.left_out > 0) {
            leave_out((dir / folder).string() + ": " + std::to_string(listing.left_out) +
                      " more trace files than the " + std::to_string(listing.names.size()) + " read");
        }
        if (candidate) {
            budget.files -= std::min(budget.files, listing.names.size());
        }
        for (const auto& name : listing.names) {
            TraceFileRef file{candidate ? folder + "/" + name : name, name, "", candidate};
            file.shown = (dir / file.relative).string();
            std::uint64_t cap = max_bytes(name);
            std::string cap_note;
            std::size_t max_events = kTraceFileMaxEvents;
            if (candidate && budget.bytes < cap) {
                cap = budget.bytes;
                cap_note = " (what is left of the candidate's trace budget)";
            }
            if (candidate) {
                max_events = std::min(max_events, budget.events);
            }
            auto read = read_untrusted_file(dir, file.relative, cap);
            if (!read.ok()) {
                leave_out(read.error + cap_note);
                continue;
            }
            if (candidate) {
                budget.bytes -= std::min<std::uint64_t>(budget.bytes, read.bytes.size());
            }
            try {
                const std::size_t events = take(file, read.bytes, max_events);
                if (candidate) {
                    budget.events -= std::min(budget.events, events);
                }
            } catch (const FormatError& error) {
                leave_out(error.what());
            } catch (const nlohmann::json::exception& error) { // a parser's check the loader did not make
                leave_out(file.shown + ": " + error.what());
            }
        }
    }
}

} // namespace detail

std::uint64_t trace_file_max_bytes(std::string_view name) {
    return name.ends_with(".engine.jsonl") ? kEngineTraceMaxBytes : kCuptiTraceMaxBytes;
}

RankTrace load_trace_file(const std::filesystem::path& path) {
    const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    const auto read =
        read_untrusted_file(folder, path.filename(), trace_file_max_bytes(path.filename().string()));
    if (!read.ok()) {
        throw FormatError(read.error);
    }
    return parse_trace_text(read.bytes, path.string());
}

std::vector<RankTrace> load_trace_directory(const std::filesystem::path& dir,
                                            std::vector<std::string>* skipped, CandidateTraceBudget* budget) {
    // Only the trace writers' names: a run directory also holds rank_<r>.events.jsonl (protocol events).
    static const std::regex pattern(R"(rank_(\d{1,9})\.(engine|cupti)\.jsonl)");
    CandidateTraceBudget own_budget;
    std::map<int, std::vector<RankTrace>> by_rank;
    // Both processes of a rank stamp CLOCK_MONOTONIC: the candidate's files are the same rank's, on
    // the same clock. The judges' come first, so that the rank's pid is its judge's.
    detail::read_trace_files(
        dir, pattern, trace_file_max_bytes, skipped, budget ? *budget : own_budget,
        [&](const detail::TraceFileRef& file, std::string_view bytes, std::size_t max_events) {
            auto trace = parse_trace_text(bytes, file.shown, max_events);
            // The CUPTI tracer falls back to the pid when RANK is unset; the file name is the authority.
            const int file_rank = std::stoi(file.name.substr(5));
            if (trace.rank != file_rank) {
                throw FormatError(file.shown + ":1: header rank " + std::to_string(trace.rank) +
                                  " does not match the file name");
            }
            const std::size_t events = trace.events.size();
            by_rank[file_rank].push_back(std::move(trace));
            return events;
        });
    std::vector<RankTrace> out;
    for (auto& [rank, parts] : by_rank) {
        out.push_back(merge_rank_traces(parts));
    }
    return out;
}

} // namespace pkbw
