// Bundles: one self-contained file holding some runs of a store with everything under them (results,
// perf, traces, archived sources and logs) and their artifacts (outputs, logs, configs) as blobs, so
// that a run can be reviewed on a machine with no checkout and no runs/ folder. A bundle is a pkbw
// store file (same schema, rollback journal, PRAGMA application_id kBundleApplicationId) whose
// artifact paths are relative ("runs/run-<id>/..."), each file archived under role "artifact" with
// that path as its name. docs/formats.md "Bundles".
#pragma once

#include "pkbw/core/error.h"
#include "pkbw/core/store.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace pkbw {

inline constexpr std::int32_t kBundleApplicationId = 0x706B6277; // "pkbw"

struct BundleReport {
    std::vector<std::int64_t> runs;
    std::size_t files = 0;            // artifact files archived
    std::uint64_t file_bytes = 0;     // their size
    std::vector<std::string> missing; // "run 3: outputs_candidate /path (no such file)"
};

// Writes `run_ids` of `source` to `file` (which must not exist; written to FILE.partial, then
// renamed). Throws StoreError naming the run or the file: an unknown run, a source store not at the
// latest schema (open it read-write once), an existing file.
BundleReport export_bundle(const Store& source, const std::vector<std::int64_t>& run_ids,
                           const std::filesystem::path& file);

// The runs a sweep (`pkbw sweep`, tables sweeps / sweep_pairs) judged, in its plan's order. Throws
// StoreError "no sweeps in this store" when the store has no sweep tables, "no sweep N" when the id
// is unknown.
std::vector<std::int64_t> sweep_run_ids(const Store& store, std::int64_t sweep_id);

// True when `file` is an SQLite file marked as a pkbw bundle (reads its header only).
bool is_bundle(const std::filesystem::path& file);

// A bundle unpacked into a folder of its own: the store (runs.db) and its artifact files at their
// recorded paths. Open `store_path()` as any store. The folder is removed when the object goes (a
// temporary folder unless `into` is given). Every archived file is checked against its hash: a
// damaged one is not written and is listed in problems(). Throws StoreError for a file that is not a
// bundle or a name that would leave the folder.
class OpenedBundle {
public:
    static OpenedBundle open(const std::filesystem::path& bundle, const std::filesystem::path& into = {});
    OpenedBundle(OpenedBundle&& other) noexcept;
    OpenedBundle& operator=(OpenedBundle&& other) noexcept;
    OpenedBundle(const OpenedBundle&) = delete;
    OpenedBundle& operator=(const OpenedBundle&) = delete;
    ~OpenedBundle();

    const std::filesystem::path& folder() const { return folder_; }
    std::filesystem::path store_path() const { return folder_ / "runs.db"; }
    const std::vector<std::string>& problems() const { return problems_; }
    // Keeps the folder when the object goes (pkbw-gui's "extract to").
    void keep() { remove_ = false; }

private:
    OpenedBundle() = default;
    std::filesystem::path folder_;
    std::vector<std::string> problems_;
    bool remove_ = false;
};

} // namespace pkbw
