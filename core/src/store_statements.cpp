// The sqlite3 statement wrapper the store uses (Stmt), and its errors in words: what a failed
// statement was doing and on which tables, never its SQL (store_db.h).
#include "store_db.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

namespace pkbw::detail {

std::string statement_tables(std::string_view sql) {
    // The names after FROM, JOIN, INTO and UPDATE, in order, once each: what a user can act on
    // (a damaged or missing table), where the statement's text (cut at 80 characters) was not.
    std::vector<std::string> words, tables;
    std::string word;
    for (char ch : std::string(sql) + " ") {
        if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') {
            word += ch;
        } else if (!word.empty()) {
            words.push_back(word);
            word.clear();
        }
    }
    for (std::size_t i = 0; i + 1 < words.size(); ++i) {
        std::string keyword = words[i];
        for (char& ch : keyword)
            ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        if (keyword == "FROM" || keyword == "JOIN" || keyword == "INTO" || keyword == "UPDATE") {
            const std::string& name = words[i + 1];
            if (std::isalpha(static_cast<unsigned char>(name[0])) &&
                std::find(tables.begin(), tables.end(), name) == tables.end())
                tables.push_back(name);
        }
    }
    if (tables.empty())
        return "the store";
    std::string text = tables.size() == 1 ? "table " : "tables ";
    for (std::size_t i = 0; i < tables.size(); ++i)
        text += (i == 0 ? "" : ", ") + tables[i];
    return text;
}

namespace {

// SQLite's words for what went wrong, with what a user can do about the ones a damaged file, a
// foreign file or a read-only place gives (the reviews found raw "database disk image is malformed",
// "attempt to write a readonly database" and SQL text). `checking`: the failure is `pkbw store
// check`'s own, which must not send the user back to itself.
std::string sqlite_failure(sqlite3* db, bool checking) {
    const std::string words = sqlite3_errmsg(db);
    switch (sqlite3_errcode(db) & 0xff) {
    case SQLITE_CORRUPT:
        return "the file is damaged (" + words + (checking ? ")" : "; `pkbw store check` names what)");
    case SQLITE_READONLY:
        // Moved, rolled-back or recovering files are read-only for other reasons than the place.
        switch (sqlite3_extended_errcode(db)) {
        case SQLITE_READONLY_DBMOVED:
        case SQLITE_READONLY_ROLLBACK:
        case SQLITE_READONLY_RECOVERY:
            return words;
        default:
            return "the file or its folder is not writable by this user (" + words +
                   "; a read-only file system or another user's folder); pass --store a writable path";
        }
    default:
        return words;
    }
}

} // namespace

std::string statement_failure(std::string_view sql) {
    std::string upper(sql);
    for (char& ch : upper)
        ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const std::size_t first = upper.find_first_not_of(" \t\n");
    std::string keyword;
    for (std::size_t i = first; i < upper.size() && std::isalpha(static_cast<unsigned char>(upper[i])); ++i)
        keyword += upper[i];
    if (keyword == "PRAGMA") {
        if (upper.find("USER_VERSION") != std::string::npos)
            return "cannot read its schema version";
        if (upper.find("INTEGRITY_CHECK") != std::string::npos)
            return "cannot check its integrity";
        return "cannot set up the connection";
    }
    if (keyword == "SELECT" || keyword == "WITH")
        return "cannot read " + statement_tables(sql);
    if (keyword == "INSERT" || keyword == "UPDATE" || keyword == "DELETE" || keyword == "REPLACE")
        return "cannot write " + statement_tables(sql);
    if (keyword == "BEGIN" || keyword == "COMMIT" || keyword == "ROLLBACK" || keyword == "SAVEPOINT" ||
        keyword == "RELEASE")
        return "cannot complete a transaction";
    if (keyword == "CREATE" || keyword == "ALTER" || keyword == "DROP")
        return "cannot update its schema";
    if (keyword == "ATTACH" || keyword == "DETACH")
        return "cannot open another store beside it";
    return "cannot read or write " + statement_tables(sql);
}

void throw_store_error(const std::filesystem::path& file, std::string_view what, sqlite3* db) {
    // A file that is no database at all: what was being read does not matter.
    if (db != nullptr && (sqlite3_errcode(db) & 0xff) == SQLITE_NOTADB)
        throw StoreError("store " + file.string() + ": not a pkbw store: not an SQLite database (" +
                         sqlite3_errmsg(db) + ")");
    std::string message = "store " + file.string() + ": " + std::string(what);
    if (db != nullptr)
        message += ": " + sqlite_failure(db, what.starts_with("cannot check its integrity"));
    throw StoreError(message);
}

Stmt::Stmt(sqlite3* db, std::string_view sql, const std::filesystem::path& file)
    : db_(db)
    , file_(file) {
    if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt_,
                           nullptr) != SQLITE_OK)
        throw_store_error(file, "cannot read or write " + statement_tables(sql), db);
}

Stmt::~Stmt() {
    sqlite3_finalize(stmt_);
}

namespace {
void check_bind(int rc, sqlite3* db, const std::filesystem::path& file, int index) {
    if (rc != SQLITE_OK)
        throw_store_error(file, "cannot bind parameter " + std::to_string(index), db);
}
} // namespace

Stmt& Stmt::bind(int index, std::int64_t value) {
    check_bind(sqlite3_bind_int64(stmt_, index, value), db_, file_, index);
    return *this;
}

Stmt& Stmt::bind(int index, double value) {
    if (std::isnan(value))
        return bind_null(index);
    check_bind(sqlite3_bind_double(stmt_, index, value), db_, file_, index);
    return *this;
}

Stmt& Stmt::bind(int index, std::string_view text) {
    check_bind(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT),
               db_, file_, index);
    return *this;
}

Stmt& Stmt::bind_blob(int index, const void* data, std::size_t bytes) {
    check_bind(sqlite3_bind_blob64(stmt_, index, data, bytes, SQLITE_TRANSIENT), db_, file_, index);
    return *this;
}

Stmt& Stmt::bind_null(int index) {
    check_bind(sqlite3_bind_null(stmt_, index), db_, file_, index);
    return *this;
}

int Stmt::parameter_index(const char* name) const {
    int index = sqlite3_bind_parameter_index(stmt_, name);
    if (index == 0)
        throw StoreError("store " + file_.string() + ": statement has no parameter " + name);
    return index;
}

bool Stmt::step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    std::string sql = sqlite3_sql(stmt_);
    sqlite3_reset(stmt_);
    throw_store_error(file_, statement_failure(sql), db_);
}

void Stmt::run() {
    while (step()) {
    }
    sqlite3_reset(stmt_);
}

void Stmt::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

bool Stmt::is_null(int column) const {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::int64_t Stmt::i64(int column) const {
    return sqlite3_column_int64(stmt_, column);
}

double Stmt::real(int column) const {
    return is_null(column) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(stmt_, column);
}

std::string Stmt::text(int column) const {
    const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return data ? std::string(data, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
                : std::string();
}

std::optional<std::int64_t> Stmt::opt_i64(int column) const {
    return is_null(column) ? std::nullopt : std::optional<std::int64_t>(i64(column));
}

std::optional<double> Stmt::opt_real(int column) const {
    return is_null(column) ? std::nullopt : std::optional<double>(sqlite3_column_double(stmt_, column));
}

const void* Stmt::blob(int column) const {
    return sqlite3_column_blob(stmt_, column);
}
std::size_t Stmt::bytes(int column) const {
    return static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column));
}

} // namespace pkbw::detail
