// Internal to the store merge (store_merge.cpp, store_merge_rows.cpp): the connections and raw
// statements it copies rows with, and the Merger that copies one input's tables into the target.
#pragma once

#include "pkbw/core/store_merge.h"
#include "store_db.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace pkbw::store_merge_detail {

namespace fs = std::filesystem;

// One store's connection: the target read-write, an input as Store::open_read_only reads it.
class Db : public detail::Connection {
public:
    Db(const fs::path& path, bool write);
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

// The table's columns in order, with its INTEGER PRIMARY KEY marked when it is the only key column.
std::vector<Column> columns_of(Db& db, const std::string& table);

inline std::string sql_name(const std::string& name) {
    return "\"" + name + "\"";
}

inline std::string text_of(sqlite3_stmt* s, int column) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, column));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s, column))) : std::string();
}

struct FolderCopy {
    fs::path from, staging, to;
};

// Copies one input after another into the target's open transaction: runs (their folders staged to be
// copied), sweeps and pairs, tables remapped by their own ids, then every table keyed by run.
class Merger {
public:
    Merger(Db& target, fs::path target_runs, MergeReport& report)
        : target_(target)
        , target_runs_(std::move(target_runs))
        , report_(report) {}

    void merge(Db& input);

    std::vector<FolderCopy>& folders() { return folders_; }

private:
    void copy_runs(Db& input);
    std::optional<std::int64_t> remap_run(Db& input, sqlite3_stmt* s, int column, const std::string& table);
    void copy_run_rows(Db& input, const std::string& table, const std::vector<Column>& all);
    void copy_remapped(Db& input, const std::string& table, std::map<std::int64_t, std::int64_t>* ids,
                       const std::map<std::string, const std::map<std::int64_t, std::int64_t>*>& references,
                       const std::string& verb = "INSERT");
    void copy_sweeps(Db& input);
    void copy_pairs(Db& input);

    Db& target_;
    fs::path target_runs_;
    MergeReport& report_;
    std::map<std::int64_t, std::int64_t> run_ids_, sweep_ids_;
    std::map<std::int64_t, std::pair<std::string, std::string>> run_dirs_;
    std::set<std::string> taken_;
    std::vector<FolderCopy> folders_;
};

} // namespace pkbw::store_merge_detail
