// `pkbw store check`: a store file examined read-only (store_check.h).
#include "pkbw/core/store_check.h"

#include "store_db.h"

#include <memory>
#include <set>
#include <system_error>

namespace fs = std::filesystem;

namespace pkbw {
namespace {

struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};

// The rows of a pragma, one per line; an SQLite error is thrown as a StoreError naming the file.
std::string pragma_lines(sqlite3* db, const fs::path& path, const char* pragma) {
    detail::Stmt stmt(db, pragma, path);
    std::string text;
    while (stmt.step())
        text += (text.empty() ? "" : "\n") + stmt.text(0);
    return text;
}

// This is `pkbw store check`: its report must not send the user back to itself (store errors elsewhere
// end "; `pkbw store check` names what").
StoreCheckReport without_pointer_to_itself(StoreCheckReport report) {
    const std::string pointer = "; `pkbw store check` names what";
    for (std::string* text : {&report.open_error, &report.integrity, &report.files_note})
        for (auto at = text->find(pointer); at != std::string::npos; at = text->find(pointer))
            text->erase(at, pointer.size());
    return report;
}

bool exists(const fs::path& path) {
    std::error_code ec;
    return fs::exists(path, ec);
}

void check_files(const Store& store, StoreCheckReport& report) {
    // Artifacts a bundle carries inside the file, by their path relative to the store's folder.
    const auto runs = store.list_runs({}, {RunSortColumn::Id, false}, 1 << 30);
    report.runs = static_cast<std::int64_t>(runs.size());
    for (const auto& run : runs) {
        std::set<std::string> archived;
        for (const auto& file : store.run_files(run.id))
            if (file.role == file_role::kArtifact)
                archived.insert(file.name);
        const auto in_store = [&](const std::string& path) {
            const fs::path rest = fs::path(path).lexically_relative(store.folder());
            return !rest.empty() && archived.count(rest.generic_string()) > 0;
        };
        std::int64_t on_disk = 0;
        for (const auto& artifact : store.artifacts(run.id)) {
            if (artifact.path.empty())
                continue;
            ++report.files_checked;
            if (exists(artifact.path))
                ++on_disk;
            else if (in_store(artifact.path))
                ++report.files_archived;
            else
                report.missing.push_back({run.id, artifact.kind, artifact.path});
        }
        // The run folder is looked for where the run has files on disk, or none archived (a bundle's
        // runs have their folders only once unpacked).
        if (!run.run_dir.empty() && (on_disk > 0 || archived.empty())) {
            ++report.files_checked;
            if (!exists(run.run_dir))
                report.missing.push_back({run.id, "run_dir", run.run_dir});
        }
    }
}

} // namespace

StoreCheckReport check_store(const fs::path& path) {
    StoreCheckReport report;
    report.path = path;
    report.expected_version = Store::latest_schema_version();
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        report.open_error = "no such file";
        return report;
    }
    if (fs::is_regular_file(path, ec) && fs::file_size(path, ec) == 0 && !ec) {
        std::error_code wal_error;
        const auto wal_bytes = fs::file_size(path.string() + "-wal", wal_error);
        if (wal_error || wal_bytes == 0) {
            report.open_error = "the file is empty (0 bytes), not a pkbw store";
            return report;
        }
    }
    try {
        const auto mode =
            detail::read_as_immutable(path) ? detail::OpenMode::Immutable : detail::OpenMode::ReadOnly;
        std::unique_ptr<sqlite3, Closer> db(detail::open_connection(path, mode, "cannot open read-only"));
        report.schema_version =
            static_cast<int>(std::stoll(pragma_lines(db.get(), path, "PRAGMA user_version")));
        try {
            report.integrity = pragma_lines(db.get(), path, "PRAGMA integrity_check(100)");
        } catch (const StoreError& error) { // damaged past what integrity_check reports as rows
            report.integrity = error.what();
        }
    } catch (const std::exception& error) {
        report.open_error = error.what();
        return without_pointer_to_itself(std::move(report));
    }
    if (!report.schema_ok()) {
        report.files_note =
            report.schema_version < report.expected_version
                ? "files not checked: the schema is older than this build's (pkbw store migrate)"
                : "files not checked: the schema is newer than this build's";
        return without_pointer_to_itself(std::move(report));
    }
    try {
        const Store store = Store::open_read_only(path);
        check_files(store, report);
    } catch (const std::exception& error) {
        report.files_note = std::string("files not checked: ") + error.what();
    }
    return without_pointer_to_itself(std::move(report));
}

} // namespace pkbw
