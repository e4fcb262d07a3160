// The Recorder that writes pkbw's SQLite store (core/store.h), and the store readers behind
// `pkbw runs` and `pkbw show`.
#pragma once

#include "recorder.h"

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

namespace pkbw::cli {

// Opens (creating if needed) the store at `path`. Throws pkbw::StoreError naming the file.
std::unique_ptr<Recorder> open_store_recorder(const std::filesystem::path& path);

// --store, else $PKBW_STORE, else the default path (core/paths.h).
std::filesystem::path resolve_store_path(const std::optional<std::string>& flag);
// --cache-dir default: $PKBW_CACHE_DIR, else $XDG_CACHE_HOME/pkbw, else ~/.cache/pkbw.
std::filesystem::path default_cache_root();

struct RunsQuery {
    std::optional<std::string> problem; // a stem, or PKB's number
    std::optional<std::string> status;
    std::optional<std::string> generation; // the generation label (solutions_... folder name)
    std::optional<std::int64_t> sweep;     // runs of this sweep
    int limit = 20;
    bool json = false;
};
// Read commands open the store read-only (never created, migrated or switched to WAL); a missing or
// empty file is a usage error naming it. `pkbw runs`; returns the exit code.
int list_runs(const std::filesystem::path& store, const RunsQuery& query, std::ostream& out,
              std::ostream& err);
// `pkbw show RUN`; returns the exit code.
int show_run(const std::filesystem::path& store, std::int64_t run_id, bool json, std::ostream& out,
             std::ostream& err);

} // namespace pkbw::cli
