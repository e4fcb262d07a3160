// The traces of a run (store_traces): split from run.cpp, which owns the rest of a run's life. The
// trace directory holds the judges' files and, in trace/candidate, those the candidates' processes
// wrote: read as untrusted input (docs/tracing.md, "What the launcher reads, and what a bad file costs").
#include "pkbw/core/error.h"
#include "pkbw/core/kineto.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/trace.h"
#include "run_session.h"

#include <algorithm>

namespace fs = std::filesystem;

namespace pkbw::cli::detail {

std::vector<std::string> Run::store_traces() {
    std::error_code ec;
    const fs::path dir = run_layout::trace_dir(run_dir_);
    // The judges made it: a link in its place would take the loaders elsewhere (below it, nothing
    // that is a link is followed).
    const auto type = fs::symlink_status(dir, ec).type();
    if (options_.trace_iterations <= 0 || type == fs::file_type::not_found)
        return {};
    if (type != fs::file_type::directory) {
        err_ << "pkbw: traces not stored: " << dir.string() << " is not a directory (a link?)\n";
        return {"traces not stored: trace/ is not a directory"};
    }
    // The candidate's process writes trace/candidate: a file there that cannot be read costs only
    // itself, and the judges' files are kept whatever it holds (docs/tracing.md).
    std::vector<std::string> skipped;
    std::string not_stored;
    try {
        CandidateTraceBudget budget; // one for both loaders
        // Native ranks write pkbw's trace files; PKB's Python ranks torch-profiler traces.
        auto traces = load_trace_directory(dir, &skipped, &budget);
        for (auto& profiled : load_profiler_directory(dir, &skipped, &budget)) {
            const auto same = std::find_if(traces.begin(), traces.end(),
                                           [&](const RankTrace& t) { return t.rank == profiled.rank; });
            if (same == traces.end()) {
                traces.push_back(std::move(profiled));
            } else {
                *same = merge_rank_traces({*same, profiled});
            }
        }
        std::sort(traces.begin(), traces.end(),
                  [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
        recorder_.add_traces(run_id_, traces);
        warn_about_nccl_in_trace(traces);
        std::size_t events = 0, dropped = 0;
        for (const auto& t : traces) {
            events += t.events.size();
            dropped += t.dropped_records;
        }
        if (!options_.json)
            out_ << "  trace: " << events << " events from " << traces.size() << " rank(s), " << dropped
                 << " dropped (pkbw export " << run_id_ << " --format chrome-trace -o FILE)\n";
    } catch (const Error& error) {
        err_ << "pkbw: traces not stored: " << error.what() << "\n";
        not_stored = std::string("traces not stored: ") + error.what();
    }
    // A few in the run's warnings, each short: the candidate decides how many files there are.
    constexpr std::size_t kNamed = 3;
    std::vector<std::string> warnings;
    if (!not_stored.empty())
        warnings.push_back(not_stored.substr(0, 300));
    const std::string prefix = run_dir_.string() + "/";
    for (std::size_t i = 0; i < skipped.size(); ++i) {
        err_ << "pkbw: a trace file is left out: " << skipped[i] << "\n";
        // Paths in the run's warnings are the run directory's (trace/candidate/...).
        const std::string& why = skipped[i];
        const std::string shown = why.starts_with(prefix) ? why.substr(prefix.size()) : why;
        if (i < kNamed)
            warnings.push_back("trace file left out: " + shown.substr(0, 300));
    }
    if (skipped.size() > kNamed)
        warnings.push_back(std::to_string(skipped.size() - kNamed) +
                           " more trace file(s) left out (pkbw's stderr names them)");
    return warnings;
}

} // namespace pkbw::cli::detail
