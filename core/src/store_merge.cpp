// Merging run stores. Rows are copied column by column from each input's own read-only connection
// into one transaction on the target, so any number of inputs works (ATTACH is limited to 10 and
// cannot be used inside a transaction).
#include "pkbw/core/store_merge.h"

#include "pkbw/core/run_layout.h"
#include "pkbw/core/store.h"
#include "store_merge_copy.h"

#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace pkbw {
namespace store_merge_detail {
namespace {

// An input is read as Store::open_read_only reads it (immutable in a folder it cannot write).
sqlite3* open_merge_file(const fs::path& path, bool write) {
    const auto mode = write                             ? detail::OpenMode::ReadWrite
                      : detail::read_as_immutable(path) ? detail::OpenMode::Immutable
                                                        : detail::OpenMode::ReadOnly;
    return detail::open_connection(path, mode, "cannot open");
}

// The tables in an order that lets every foreign key find its parent row.
std::vector<std::string> table_order(Db& db) {
    auto s = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                        "ORDER BY rowid");
    std::vector<std::string> names;
    while (s.step())
        names.push_back(s.text(0));
    return names;
}

} // namespace

Db::Db(const fs::path& path, bool write)
    : detail::Connection(open_merge_file(path, write), path) {}

std::vector<Column> columns_of(Db& db, const std::string& table) {
    auto s = db.prepare("SELECT name, type, pk FROM pragma_table_info(?)");
    s.bind(1, table);
    std::vector<Column> columns;
    int key_columns = 0;
    while (s.step()) {
        columns.push_back({s.text(0), s.i64(2) > 0 && s.text(1) == "INTEGER"});
        key_columns += s.i64(2) > 0 ? 1 : 0;
    }
    if (key_columns != 1)
        for (auto& c : columns)
            c.integer_key = false;
    return columns;
}

void Merger::merge(Db& input) {
    run_ids_.clear();
    sweep_ids_.clear();
    run_dirs_.clear();
    std::vector<std::string> tables = table_order(input);
    std::set<std::string> pending(tables.begin(), tables.end());
    copy_runs(input);
    pending.erase("runs");
    copy_sweeps(input);
    pending.erase("sweeps");
    copy_pairs(input);
    pending.erase("sweep_pairs");
    // Tables whose rows refer to each other by their own ids (schema 4) or are content-addressed
    // (schema 5's blobs): each is copied with its references remapped, in parent-first order.
    using IdMap = std::map<std::int64_t, std::int64_t>;
    IdMap generation_ids, exchange_ids;
    if (pending.erase("generations"))
        copy_remapped(input, "generations", &generation_ids, {});
    if (pending.erase("generation_exchanges"))
        copy_remapped(input, "generation_exchanges", &exchange_ids, {{"generation_id", &generation_ids}});
    if (pending.erase("agent_attempts"))
        copy_remapped(
            input, "agent_attempts", nullptr,
            {{"generation_id", &generation_ids}, {"exchange_id", &exchange_ids}, {"run_id", &run_ids_}});
    if (pending.erase("blobs"))
        copy_remapped(input, "blobs", nullptr, {}, "INSERT OR IGNORE"); // same sha256, same content
    for (const auto& table : tables) {
        if (!pending.count(table))
            continue;
        auto columns = columns_of(input, table);
        bool has_run = false;
        for (const auto& c : columns)
            has_run = has_run || c.name == "run_id";
        if (!has_run)
            throw StoreError("store merge: input " + input.path().string() + ": table '" + table +
                             "' has no run_id column; this pkbw does not know how to merge it");
        copy_run_rows(input, table, columns);
    }
}

void Merger::copy_runs(Db& input) {
    auto columns = columns_of(input, "runs");
    std::string select = "SELECT ", insert_cols, insert_vals;
    for (std::size_t i = 0; i < columns.size(); ++i) {
        select += (i ? ", " : "") + sql_name(columns[i].name);
        if (columns[i].name == "id")
            continue;
        insert_cols += (insert_cols.empty() ? "" : ", ") + sql_name(columns[i].name);
        insert_vals += insert_vals.empty() ? "?" : ", ?";
    }
    Raw rows(input, select + " FROM runs ORDER BY id");
    Raw insert(target_, "INSERT INTO runs (" + insert_cols + ") VALUES (" + insert_vals + ")");
    Raw duplicate(target_, "SELECT id FROM runs WHERE started_at = ? AND writer_host = ? AND writer_pid = ? "
                           "AND problem_stem = ? AND mode = ? AND solution_sha256 = ?");
    auto index_of = [&](const char* name) {
        for (std::size_t i = 0; i < columns.size(); ++i)
            if (columns[i].name == name)
                return static_cast<int>(i);
        throw StoreError("store merge: input " + input.path().string() + ": runs has no column " + name);
    };
    const int id_col = index_of("id"), dir_col = index_of("run_dir");
    const int dup_cols[] = {index_of("started_at"),   index_of("writer_host"), index_of("writer_pid"),
                            index_of("problem_stem"), index_of("mode"),        index_of("solution_sha256")};
    while (rows.step()) {
        sqlite3_stmt* r = rows.get();
        const std::int64_t old_id = sqlite3_column_int64(r, id_col);
        for (int i = 0; i < 6; ++i)
            sqlite3_bind_value(duplicate.get(), i + 1, sqlite3_column_value(r, dup_cols[i]));
        if (duplicate.step()) {
            const std::int64_t existing = sqlite3_column_int64(duplicate.get(), 0);
            throw StoreError("store merge: run " + std::to_string(old_id) + " of " + input.path().string() +
                             " is already in the target as run " + std::to_string(existing) +
                             " (same start time, writer and problem); nothing was merged");
        }
        sqlite3_reset(duplicate.get());
        const std::string old_dir = text_of(r, dir_col);
        std::string new_dir = old_dir;
        std::error_code ec;
        // A store copied between machines travels with its runs/ beside it: look there when the
        // recorded folder is gone.
        fs::path source = old_dir;
        if (!old_dir.empty() && !fs::is_directory(source, ec))
            source = run_layout::runs_dir_of_store(fs::absolute(input.path())) / fs::path(old_dir).filename();
        if (!old_dir.empty() && fs::is_directory(source, ec)) {
            fs::path to = target_runs_ / fs::path(old_dir).filename();
            for (int n = 2; fs::exists(to, ec) || taken_.count(to.string()); ++n)
                to = target_runs_ / (fs::path(old_dir).filename().string() + "-" + std::to_string(n));
            taken_.insert(to.string());
            fs::path staging =
                target_runs_ / (".merge-" + std::to_string(getpid()) + "-" + std::to_string(folders_.size()));
            folders_.push_back({source, staging, to});
            new_dir = to.string();
        } else if (!old_dir.empty()) {
            report_.warnings.push_back("run " + std::to_string(old_id) + " of " + input.path().string() +
                                       ": its folder " + old_dir + " is missing; artifact paths kept");
        }
        run_dirs_[old_id] = {old_dir, new_dir};
        int bind = 1;
        for (std::size_t i = 0; i < columns.size(); ++i) {
            if (static_cast<int>(i) == id_col)
                continue;
            if (static_cast<int>(i) == dir_col)
                sqlite3_bind_text(insert.get(), bind++, new_dir.c_str(), -1, SQLITE_TRANSIENT);
            else
                sqlite3_bind_value(insert.get(), bind++, sqlite3_column_value(r, static_cast<int>(i)));
        }
        insert.run_and_reset();
        run_ids_[old_id] = sqlite3_last_insert_rowid(target_.get());
        ++report_.runs;
    }
}

} // namespace store_merge_detail

namespace {

using namespace store_merge_detail;

// Checks an input before anything is written: a pkbw store at this build's schema, intact.
void check_input(const fs::path& input, const fs::path& into) {
    std::error_code ec;
    if (!fs::is_regular_file(input, ec))
        throw StoreError("store merge: input " + input.string() + ": no such file");
    if (fs::exists(into, ec) && fs::equivalent(input, into, ec))
        throw StoreError("store merge: input " + input.string() + " is the target store");
    Store::open_read_only(input); // schema version, foreign files, views/triggers
    Db db(input, false);
    auto check = db.prepare("PRAGMA integrity_check");
    std::string result;
    while (check.step())
        result += (result.empty() ? "" : "; ") + check.text(0);
    if (result != "ok")
        throw StoreError("store merge: input " + input.string() +
                         " is damaged, nothing was merged (PRAGMA integrity_check: " + result.substr(0, 300) +
                         ")");
}

void remove_staging(const std::vector<FolderCopy>& folders) {
    std::error_code ec;
    for (const auto& f : folders)
        fs::remove_all(f.staging, ec);
}

} // namespace

MergeReport merge_stores(const std::vector<fs::path>& inputs, const fs::path& into) {
    if (inputs.empty())
        throw StoreError("store merge: no input stores");
    for (const auto& input : inputs)
        check_input(input, into);
    Store::open(into).check_before_write(); // creates or migrates the target; refuses a damaged one
    const fs::path target_runs = run_layout::runs_dir_of_store(fs::absolute(into));
    MergeReport report;
    Db target(into, true);
    target.exec("PRAGMA foreign_keys = ON");
    target.exec("BEGIN IMMEDIATE");
    // Trace events reference trace_ranks, which a generic copy may reach later: checked at COMMIT.
    target.exec("PRAGMA defer_foreign_keys = ON");
    Merger merger(target, target_runs, report);
    try {
        for (const auto& input : inputs) {
            Db db(input, false);
            merger.merge(db);
        }
        std::error_code ec;
        fs::create_directories(target_runs, ec);
        for (const auto& f : merger.folders()) {
            fs::copy(f.from, f.staging, fs::copy_options::recursive, ec);
            if (ec)
                throw StoreError("store merge: cannot copy run folder " + f.from.string() + " to " +
                                 f.staging.string() + ": " + ec.message() + "; nothing was merged");
        }
        target.exec("COMMIT");
    } catch (...) {
        sqlite3_exec(target.get(), "ROLLBACK", nullptr, nullptr, nullptr);
        remove_staging(merger.folders());
        throw;
    }
    for (const auto& f : merger.folders()) {
        std::error_code ec;
        fs::rename(f.staging, f.to, ec);
        if (ec)
            report.warnings.push_back("run folder " + f.staging.string() + " could not be renamed to " +
                                      f.to.string() + ": " + ec.message());
        else
            ++report.folders;
    }
    return report;
}

} // namespace pkbw
