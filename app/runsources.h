// The sources and logs of a run as the Sources tab shows them. Qt-free.
//
// What the store archived when the run was recorded (core/run_archive.h) comes first. For runs
// recorded before the archive, this reads what the run folder and the record say: the reference PKB
// ran (config.json's pkb.reference_file) or pkbw's own problem file, the candidate at its recorded
// path (relative paths tried against the run folder's checkout, the store's folder and the working
// directory) checked against the recorded sha256, and every *.log of the run folder.
#pragma once

#include "rundata.h"

#include <filesystem>
#include <string>
#include <vector>

namespace pkbw::app {

struct SourceFile {
    std::string title; // the path shown above the text
    std::string text;
    std::string error; // why the text is missing ("" when found)
    std::string note;  // e.g. "sha256 differs from the run's: edited since"
    bool found() const { return error.empty(); }
};

struct RunLog {
    std::string name; // "compile_candidate.log", "rank_0.log"
    std::string text;
};

struct RunSources {
    SourceFile reference, candidate;
    std::vector<RunLog> logs; // compile logs first, then rank logs
};

// `problems_root`: pkbw's problems folder for the native reference (empty: not looked for).
RunSources load_run_sources(const RunData& data, const std::filesystem::path& store_path,
                            const std::filesystem::path& problems_root);

} // namespace pkbw::app
