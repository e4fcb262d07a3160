// Merging run stores. Rows are copied column by column from each input's own read-only connection
// into one transaction on the target, so any number of inputs works (ATTACH is limited to 10 and
// cannot be used inside a transaction).
#include "pkbw/core/store_merge.h"

#include "pkbw/core/store.h"
#include "pkbw/core/sweep_store.h"
#include "store_db.h"

#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace pkbw {
namespace {

// An input is read as Store::open_read_only reads it (immutable in a folder it cannot write).
sqlite3* open_merge_file(const fs::path& path, bool write) {
    const auto mode = write                             ? detail::OpenMode::ReadWrite
                      : detail::read_as_immutable(path) ? detail::OpenMode::Immutable
                                                        : detail::OpenMode::ReadOnly;
    return detail::open_connection(path, mode, "cannot open");
}

class Db : public detail::Connection {
public:
    Db(const fs::path& path, bool write)
        : detail::Connection(open_merge_file(path, write), path) {}
    sqlite3* get() const { return db(); }
};

// A raw statement for value-by-value copies (sqlite3_bind_value); Stmt has no such bind.
class Raw {
public:
    Raw(Db& db, const std::string& sql)
        : db_(db) {
        if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
            detail::throw_store_error(db.path(), "cannot read or write " + detail::statement_tables(sql),
                                      db.get());
    }
    ~Raw() { sqlite3_finalize(stmt_); }
    Raw(const Raw&) = delete;
    Raw& operator=(const Raw&) = delete;
    sqlite3_stmt* get() const { return stmt_; }
    bool step() {
        int rc = sqlite3_step(stmt_);
        if (rc == SQLITE_ROW)
            return true;
        if (rc == SQLITE_DONE)
            return false;
        detail::throw_store_error(db_.path(), detail::statement_failure(sqlite3_sql(stmt_)), db_.get());
    }
    void run_and_reset() {
        while (step()) {
        }
        sqlite3_reset(stmt_);
        sqlite3_clear_bindings(stmt_);
    }

private:
    Db& db_;
    sqlite3_stmt* stmt_ = nullptr;
};

struct Column {
    std::string name;
    bool integer_key = false; // the table's own INTEGER PRIMARY KEY (renumbered in the target)
};

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

std::string sql_name(const std::string& name) {
    return "\"" + name + "\"";
}

std::string text_of(sqlite3_stmt* s, int column) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, column));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s, column))) : std::string();
}

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

struct FolderCopy {
    fs::path from, staging, to;
};

// The tables in an order that lets every foreign key find its parent row.
std::vector<std::string> table_order(Db& db) {
    auto s = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                        "ORDER BY rowid");
    std::vector<std::string> names;
    while (s.step())
        names.push_back(s.text(0));
    return names;
}

class Merger {
public:
    Merger(Db& target, fs::path target_runs, MergeReport& report)
        : target_(target)
        , target_runs_(std::move(target_runs))
        , report_(report) {}

    void merge(Db& input) {
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

    std::vector<FolderCopy>& folders() { return folders_; }

private:
    void copy_runs(Db& input) {
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
        Raw duplicate(target_,
                      "SELECT id FROM runs WHERE started_at = ? AND writer_host = ? AND writer_pid = ? "
                      "AND problem_stem = ? AND mode = ? AND solution_sha256 = ?");
        auto index_of = [&](const char* name) {
            for (std::size_t i = 0; i < columns.size(); ++i)
                if (columns[i].name == name)
                    return static_cast<int>(i);
            throw StoreError("store merge: input " + input.path().string() + ": runs has no column " + name);
        };
        const int id_col = index_of("id"), dir_col = index_of("run_dir");
        const int dup_cols[] = {index_of("started_at"), index_of("writer_host"),
                                index_of("writer_pid"), index_of("problem_stem"),
                                index_of("mode"),       index_of("solution_sha256")};
        while (rows.step()) {
            sqlite3_stmt* r = rows.get();
            const std::int64_t old_id = sqlite3_column_int64(r, id_col);
            for (int i = 0; i < 6; ++i)
                sqlite3_bind_value(duplicate.get(), i + 1, sqlite3_column_value(r, dup_cols[i]));
            if (duplicate.step()) {
                const std::int64_t existing = sqlite3_column_int64(duplicate.get(), 0);
                throw StoreError("store merge: run " + std::to_string(old_id) + " of " +
                                 input.path().string() + " is already in the target as run " +
                                 std::to_string(existing) +
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
                source = fs::absolute(input.path()).parent_path() / "runs" / fs::path(old_dir).filename();
            if (!old_dir.empty() && fs::is_directory(source, ec)) {
                fs::path to = target_runs_ / fs::path(old_dir).filename();
                for (int n = 2; fs::exists(to, ec) || taken_.count(to.string()); ++n)
                    to = target_runs_ / (fs::path(old_dir).filename().string() + "-" + std::to_string(n));
                taken_.insert(to.string());
                fs::path staging = target_runs_ / (".merge-" + std::to_string(getpid()) + "-" +
                                                   std::to_string(folders_.size()));
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

    std::optional<std::int64_t> remap_run(Db& input, sqlite3_stmt* s, int column, const std::string& table) {
        if (sqlite3_column_type(s, column) == SQLITE_NULL)
            return std::nullopt;
        auto found = run_ids_.find(sqlite3_column_int64(s, column));
        if (found == run_ids_.end())
            throw StoreError("store merge: input " + input.path().string() + ": table " + table +
                             " refers to run " + std::to_string(sqlite3_column_int64(s, column)) +
                             ", which it does not hold");
        return found->second;
    }

    void copy_run_rows(Db& input, const std::string& table, const std::vector<Column>& all) {
        std::vector<Column> columns;
        for (const auto& c : all)
            if (!c.integer_key)
                columns.push_back(c);
        std::string select = "SELECT ", names, values;
        int run_col = -1, path_col = -1;
        for (std::size_t i = 0; i < columns.size(); ++i) {
            select += (i ? ", " : "") + sql_name(columns[i].name);
            names += (i ? ", " : "") + sql_name(columns[i].name);
            values += i ? ", ?" : "?";
            if (columns[i].name == "run_id")
                run_col = static_cast<int>(i);
            if (table == "artifacts" && columns[i].name == "path")
                path_col = static_cast<int>(i);
        }
        Raw rows(input, select + " FROM " + sql_name(table));
        Raw insert(target_, "INSERT INTO " + sql_name(table) + " (" + names + ") VALUES (" + values + ")");
        while (rows.step()) {
            sqlite3_stmt* r = rows.get();
            auto run = remap_run(input, r, run_col, table);
            for (int i = 0; i < static_cast<int>(columns.size()); ++i) {
                if (i == run_col) {
                    if (run)
                        sqlite3_bind_int64(insert.get(), i + 1, *run);
                    else
                        sqlite3_bind_null(insert.get(), i + 1);
                } else if (i == path_col) {
                    // Artifacts inside the run folder follow it to its new place.
                    std::string path = text_of(r, i);
                    const auto& [old_dir, new_dir] = run_dirs_[sqlite3_column_int64(r, run_col)];
                    if (!old_dir.empty() && path.starts_with(old_dir + "/"))
                        path = new_dir + path.substr(old_dir.size());
                    sqlite3_bind_text(insert.get(), i + 1, path.c_str(), -1, SQLITE_TRANSIENT);
                } else {
                    sqlite3_bind_value(insert.get(), i + 1, sqlite3_column_value(r, i));
                }
            }
            insert.run_and_reset();
        }
    }

    // Copies every row of `table`; its own INTEGER PRIMARY KEY is renumbered (old -> new into `ids`),
    // and each column named in `references` is rewritten through its map (NULL stays NULL; a row that
    // refers to an id the input does not hold stops the merge).
    void copy_remapped(Db& input, const std::string& table, std::map<std::int64_t, std::int64_t>* ids,
                       const std::map<std::string, const std::map<std::int64_t, std::int64_t>*>& references,
                       const std::string& verb = "INSERT") {
        const auto all = columns_of(input, table);
        std::string select = "SELECT ", names, values;
        int key_col = -1;
        std::vector<const std::map<std::int64_t, std::int64_t>*> maps;
        std::vector<std::string> map_names;
        std::vector<int> bound; // input column -> insert parameter (or -1 for the renumbered key)
        int parameters = 0;
        for (std::size_t i = 0; i < all.size(); ++i) {
            select += (i ? ", " : "") + sql_name(all[i].name);
            auto found = references.find(all[i].name);
            maps.push_back(found == references.end() ? nullptr : found->second);
            map_names.push_back(all[i].name);
            if (all[i].integer_key) {
                key_col = static_cast<int>(i);
                bound.push_back(-1);
                continue;
            }
            names += (parameters ? ", " : "") + sql_name(all[i].name);
            values += parameters ? ", ?" : "?";
            bound.push_back(++parameters);
        }
        Raw rows(input, select + " FROM " + sql_name(table));
        Raw insert(target_, verb + " INTO " + sql_name(table) + " (" + names + ") VALUES (" + values + ")");
        while (rows.step()) {
            sqlite3_stmt* r = rows.get();
            for (std::size_t i = 0; i < all.size(); ++i) {
                const int parameter = bound[i];
                if (parameter < 0)
                    continue;
                const int column = static_cast<int>(i);
                if (maps[i] && sqlite3_column_type(r, column) != SQLITE_NULL) {
                    const std::int64_t old = sqlite3_column_int64(r, column);
                    auto to = maps[i]->find(old);
                    if (to == maps[i]->end())
                        throw StoreError("store merge: input " + input.path().string() + ": table " + table +
                                         " " + map_names[i] + " " + std::to_string(old) +
                                         " refers to a row it does not hold");
                    sqlite3_bind_int64(insert.get(), parameter, to->second);
                } else {
                    sqlite3_bind_value(insert.get(), parameter, sqlite3_column_value(r, column));
                }
            }
            insert.run_and_reset();
            if (ids && key_col >= 0)
                (*ids)[sqlite3_column_int64(r, key_col)] = sqlite3_last_insert_rowid(target_.get());
        }
    }

    void copy_sweeps(Db& input) {
        Raw rows(input,
                 "SELECT id, uuid, name, mode, backend, world_size, options, created_at, updated_at, status "
                 "FROM sweeps ORDER BY id");
        Raw find(target_, "SELECT id FROM sweeps WHERE uuid = ?");
        Raw insert(target_, "INSERT INTO sweeps (uuid, name, mode, backend, world_size, options, created_at, "
                            "updated_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
        while (rows.step()) {
            sqlite3_stmt* r = rows.get();
            sqlite3_bind_value(find.get(), 1, sqlite3_column_value(r, 1));
            if (find.step()) {
                sweep_ids_[sqlite3_column_int64(r, 0)] = sqlite3_column_int64(find.get(), 0);
                sqlite3_reset(find.get());
                continue;
            }
            sqlite3_reset(find.get());
            for (int i = 1; i <= 9; ++i)
                sqlite3_bind_value(insert.get(), i, sqlite3_column_value(r, i));
            insert.run_and_reset();
            sweep_ids_[sqlite3_column_int64(r, 0)] = sqlite3_last_insert_rowid(target_.get());
            ++report_.sweeps;
        }
    }

    // A pair judged in the input fills the target's pair; judged in both is a duplicate.
    void copy_pairs(Db& input) {
        Raw rows(input,
                 "SELECT sweep_id, generation_label, problem_stem, problem_id, solution_path, placed_by, "
                 "position, run_id, state, message, seconds FROM sweep_pairs");
        Raw find(target_, "SELECT run_id, state FROM sweep_pairs WHERE sweep_id = ? AND generation_label = ? "
                          "AND problem_stem = ?");
        Raw insert(target_, "INSERT INTO sweep_pairs (sweep_id, generation_label, problem_stem, problem_id, "
                            "solution_path, placed_by, position, run_id, state, message, seconds) VALUES "
                            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        Raw update(target_, "UPDATE sweep_pairs SET run_id = ?, state = ?, message = ?, seconds = ? WHERE "
                            "sweep_id = ? AND generation_label = ? AND problem_stem = ?");
        while (rows.step()) {
            sqlite3_stmt* r = rows.get();
            const std::int64_t sweep = sweep_ids_.at(sqlite3_column_int64(r, 0));
            auto run = remap_run(input, r, 7, "sweep_pairs");
            const std::string state = text_of(r, 8);
            sqlite3_bind_int64(find.get(), 1, sweep);
            sqlite3_bind_value(find.get(), 2, sqlite3_column_value(r, 1));
            sqlite3_bind_value(find.get(), 3, sqlite3_column_value(r, 2));
            const bool exists = find.step();
            const bool target_judged = exists && sqlite3_column_type(find.get(), 0) != SQLITE_NULL &&
                                       text_of(find.get(), 1) == pair_state::kDone;
            sqlite3_reset(find.get());
            const std::string pair = "(" + text_of(r, 1) + ", " + text_of(r, 2) + ")";
            if (!exists) {
                sqlite3_bind_int64(insert.get(), 1, sweep);
                for (int i = 1; i <= 10; ++i) {
                    if (i == 7 && run)
                        sqlite3_bind_int64(insert.get(), 8, *run);
                    else if (i == 7)
                        sqlite3_bind_null(insert.get(), 8);
                    else
                        sqlite3_bind_value(insert.get(), i + 1, sqlite3_column_value(r, i));
                }
                insert.run_and_reset();
                report_.pairs += run ? 1 : 0;
            } else if (run && state == pair_state::kDone) {
                if (target_judged)
                    throw StoreError("store merge: pair " + pair + " of sweep " + text_of(r, 0) + " in " +
                                     input.path().string() +
                                     " was already judged in the target; nothing was merged");
                sqlite3_bind_int64(update.get(), 1, *run);
                sqlite3_bind_value(update.get(), 2, sqlite3_column_value(r, 8));
                sqlite3_bind_value(update.get(), 3, sqlite3_column_value(r, 9));
                sqlite3_bind_value(update.get(), 4, sqlite3_column_value(r, 10));
                sqlite3_bind_int64(update.get(), 5, sweep);
                sqlite3_bind_value(update.get(), 6, sqlite3_column_value(r, 1));
                sqlite3_bind_value(update.get(), 7, sqlite3_column_value(r, 2));
                update.run_and_reset();
                ++report_.pairs;
            }
        }
    }

    Db& target_;
    fs::path target_runs_;
    MergeReport& report_;
    std::map<std::int64_t, std::int64_t> run_ids_, sweep_ids_;
    std::map<std::int64_t, std::pair<std::string, std::string>> run_dirs_;
    std::set<std::string> taken_;
    std::vector<FolderCopy> folders_;
};

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
    const fs::path target_runs = fs::absolute(into).parent_path() / "runs";
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
