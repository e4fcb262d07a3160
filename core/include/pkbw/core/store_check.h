// `pkbw store check` (docs/store.md "Checking a store"): what is wrong with a store file, found
// without writing to it: SQLite's integrity_check, the schema version against this build's, and the
// files its runs reference (run folders, artifacts) that are no longer on disk.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace pkbw {

struct StoreMissingFile {
    std::int64_t run_id = 0;
    std::string kind; // "run_dir", or the artifact's kind ("log", "outputs", "trace", ...)
    std::string path; // as resolved (Store::resolve_recorded_path)
};

struct StoreCheckReport {
    std::filesystem::path path;
    // Set when the file could not be read as a store at all (missing, empty, not SQLite, another
    // program's database); nothing else is then filled in.
    std::string open_error;
    // PRAGMA integrity_check: "ok", or its first problems, one per line.
    std::string integrity;
    int schema_version = -1; // PRAGMA user_version (-1: not read)
    int expected_version = 0;
    // The files the runs reference, checked only when the schema is this build's (else files_note
    // says why not). Artifacts a bundle archived in the file itself count as present.
    std::int64_t runs = 0;
    std::int64_t files_checked = 0;
    std::int64_t files_archived = 0; // found in the store's own blobs (bundles), not on disk
    std::vector<StoreMissingFile> missing;
    std::string files_note;

    bool integrity_ok() const { return integrity == "ok"; }
    bool schema_ok() const { return schema_version == expected_version; }
    bool ok() const {
        return open_error.empty() && integrity_ok() && schema_ok() && missing.empty() && files_note.empty();
    }
};

// Reads `path` read-only (immutable in a folder this process cannot write, as Store::open_read_only),
// whatever its schema version; never throws for a bad file: the report says what is wrong.
StoreCheckReport check_store(const std::filesystem::path& path);

} // namespace pkbw
