#include "store_command.h"

#include "pkbw/core/error.h"
#include "pkbw/core/store.h"
#include "pkbw/core/store_check.h"
#include "run.h"
#include "store_recorder.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace pkbw::cli {
namespace {

bool missing_or_empty(const fs::path& path) {
    std::error_code ec;
    if (!fs::exists(path, ec))
        return true;
    return fs::is_regular_file(path, ec) && fs::file_size(path, ec) == 0 &&
           !fs::exists(path.string() + "-wal", ec);
}

// `path` strictly below `folder` (both absolute), never the folder itself.
bool strictly_below(const fs::path& path, const fs::path& folder) {
    const fs::path rest = path.lexically_normal().lexically_relative(folder.lexically_normal());
    return !rest.empty() && rest != "." && *rest.begin() != "..";
}

} // namespace

int store_check_command(const fs::path& path, bool as_json, std::ostream& out, std::ostream& err) {
    const StoreCheckReport r = check_store(path);
    if (as_json) {
        json missing = json::array();
        for (const auto& m : r.missing)
            missing.push_back({{"run_id", m.run_id}, {"kind", m.kind}, {"path", m.path}});
        out << json{{"event", "store_check"},
                    {"store", path.string()},
                    {"ok", r.ok()},
                    {"open_error", r.open_error.empty() ? json(nullptr) : json(r.open_error)},
                    {"integrity", r.integrity},
                    {"schema_version", r.schema_version},
                    {"expected_schema_version", r.expected_version},
                    {"runs", r.runs},
                    {"files_checked", r.files_checked},
                    {"files_archived", r.files_archived},
                    {"missing_files", missing},
                    {"files_note", r.files_note.empty() ? json(nullptr) : json(r.files_note)}}
                   .dump()
            << "\n";
    } else {
        out << "store " << path.string() << "\n";
        if (!r.open_error.empty()) {
            out << "  cannot read it as a store: " << r.open_error << "\n";
        } else {
            out << "  integrity: ";
            if (r.integrity_ok()) {
                out << "ok (PRAGMA integrity_check)\n";
            } else {
                std::istringstream lines(r.integrity);
                std::string line;
                out << "DAMAGED (PRAGMA integrity_check):\n";
                for (int shown = 0; std::getline(lines, line) && shown < 20; ++shown)
                    out << "    " << line << "\n";
            }
            out << "  schema:    version " << r.schema_version << " (this pkbw: " << r.expected_version
                << ")";
            if (r.schema_version < r.expected_version)
                out << "; older: `pkbw store migrate --store " << path.string() << "` brings it up to date";
            else if (r.schema_version > r.expected_version)
                out << "; newer: use a newer pkbw";
            out << "\n";
            if (!r.files_note.empty()) {
                out << "  files:     " << r.files_note << "\n";
            } else {
                out << "  files:     " << r.runs << " run(s), " << r.files_checked << " file(s) referenced, "
                    << r.missing.size() << " missing";
                if (r.files_archived > 0)
                    out << ", " << r.files_archived << " archived in the file";
                out << "\n";
                for (const auto& m : r.missing)
                    out << "    run " << m.run_id << ": " << m.kind << " " << m.path << " is missing\n";
            }
        }
        out << (r.ok() ? "ok" : "problems found") << "\n";
    }
    (void)err;
    if (r.open_error == "no such file" || r.open_error.starts_with("the file is empty"))
        return kExitUsage;
    return r.ok() ? kExitOk : kExitFailed;
}

int store_remove_command(const fs::path& path, const std::vector<std::int64_t>& runs, bool keep_files,
                         std::ostream& out, std::ostream& err) {
    if (runs.empty()) {
        err << "pkbw store remove: give the ids of the runs to remove\n";
        return kExitUsage;
    }
    if (missing_or_empty(path)) {
        err << "pkbw store remove: store " << path.string() << ": no such file (or empty)\n";
        return kExitUsage;
    }
    Store store = Store::open(path); // refuses a damaged file before writing anything
    std::vector<RunRecord> records;
    for (auto id : runs) {
        auto run = store.get_run(id);
        if (!run) {
            err << "pkbw store remove: no run " << id << " in " << path.string() << "; nothing removed\n";
            return kExitUsage;
        }
        if (run->status == RunStatus::Running) {
            err << "pkbw store remove: run " << id << " is still running (writer pid " << run->writer_pid
                << " on " << run->writer_host << "); nothing removed\n";
            return kExitUsage;
        }
        records.push_back(std::move(*run));
    }
    store.write_batch([&] {
        for (const auto& run : records)
            store.delete_run(run.id);
    });
    for (const auto& run : records) {
        out << "removed run " << run.id << " (" << run.problem_stem << ", " << to_string(run.mode) << ", "
            << to_string(run.status) << ")";
        std::error_code ec;
        const fs::path folder = run.run_dir.empty() ? fs::path() : fs::absolute(run.run_dir);
        if (folder.empty() || !fs::exists(fs::symlink_status(folder, ec))) {
            out << "\n";
        } else if (keep_files) {
            out << "; its folder " << folder.string() << " is kept (--keep-files)\n";
        } else if (!strictly_below(folder, store.folder())) {
            out << "; its folder " << folder.string() << " is kept (outside the store's folder "
                << store.folder().string() << ")\n";
        } else {
            fs::remove_all(folder, ec);
            if (ec)
                out << "; its folder " << folder.string() << " could not be removed: " << ec.message()
                    << "\n";
            else
                out << " and its folder " << folder.string() << "\n";
        }
    }
    return kExitOk;
}

int store_migrate_command(const fs::path& path, std::ostream& out, std::ostream& err) {
    if (missing_or_empty(path)) {
        err << "pkbw store migrate: store " << path.string()
            << ": no such file (or empty); a run creates a store at the current schema\n";
        return kExitUsage;
    }
    Store store = Store::open(path); // migrates; refuses a damaged or newer file
    out << "store " << path.string() << ": schema version " << store.schema_version() << " (this pkbw's)\n";
    return kExitOk;
}

StoreCommands::StoreCommands(CLI::App& app) {
    CLI::App* store = app.get_subcommand("store");
    check_ = store->add_subcommand("check",
                                   "check a store read-only: integrity_check, schema version, files its runs "
                                   "reference that are missing (exit 1 when something is wrong)");
    check_->add_option("STORE", check_file_,
                       "the store file (default --store, $PKBW_STORE, the default store)");
    check_->add_option("--store", check_store_, "SQLite store");
    check_->add_flag("--json", check_json_, "one JSON line {\"event\": \"store_check\", ok, ...} on stdout");
    remove_ = store->add_subcommand(
        "remove", "remove runs with their rows, archived files only they use and their run folders");
    remove_->add_option("RUN", remove_runs_, "run ids")->required();
    remove_->add_option("--store", remove_store_, "SQLite store");
    remove_->add_flag("--keep-files", keep_files_, "keep the runs' folders on disk");
    migrate_ =
        store->add_subcommand("migrate", "bring a store to this pkbw's schema (readers never migrate)");
    migrate_->add_option("STORE", migrate_file_, "the store file (default --store, ...)");
    migrate_->add_option("--store", migrate_store_, "SQLite store");
}

std::optional<int> StoreCommands::dispatch() {
    if (check_->parsed())
        return store_check_command(resolve_store_path(check_file_ ? check_file_ : check_store_), check_json_,
                                   std::cout, std::cerr);
    if (remove_->parsed())
        return store_remove_command(resolve_store_path(remove_store_), remove_runs_, keep_files_, std::cout,
                                    std::cerr);
    if (migrate_->parsed())
        return store_migrate_command(resolve_store_path(migrate_file_ ? migrate_file_ : migrate_store_),
                                     std::cout, std::cerr);
    return std::nullopt;
}

} // namespace pkbw::cli
