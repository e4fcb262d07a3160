// Opening the store: connections, pragmas, schema migrations and transactions (the statements and
// their errors: store_statements.cpp).
#include "store_db.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace pkbw::detail {

namespace {
// Long enough for a writer's batch (a few ms) and a concurrent migration; readers only wait in the
// rare moments a WAL checkpoint or recovery needs an exclusive lock.
constexpr int kBusyTimeoutMs = 10000;
} // namespace

void harden_connection(sqlite3* db, const std::filesystem::path& file) {
    // Store files travel between machines (copied, attached to reports): a file is data, never
    // code. DEFENSIVE refuses writes that can corrupt it (writable_schema and the like);
    // TRUSTED_SCHEMA off keeps SQL functions out of anything the file defines; pkbw's schema has no
    // triggers or views, so none from a file ever runs; cell_size_check catches a damaged page
    // before a read goes past it.
    const int options[][2] = {{SQLITE_DBCONFIG_DEFENSIVE, 1},
                              {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
                              {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0},
                              {SQLITE_DBCONFIG_ENABLE_VIEW, 0}};
    for (const auto& [option, value] : options) {
        if (sqlite3_db_config(db, option, value, nullptr) != SQLITE_OK)
            throw_store_error(
                file, "cannot configure the connection (sqlite3_db_config " + std::to_string(option) + ")",
                db);
    }
    if (sqlite3_exec(db, "PRAGMA cell_size_check = ON", nullptr, nullptr, nullptr) != SQLITE_OK)
        throw_store_error(file, "cannot set cell_size_check", db);
}

std::string read_only_uri(const std::filesystem::path& path, bool immutable) {
    static const char* const hex = "0123456789ABCDEF";
    std::string uri = "file:";
    for (unsigned char ch : std::filesystem::absolute(path).lexically_normal().string()) {
        if (std::isalnum(ch) || ch == '/' || ch == '.' || ch == '_' || ch == '-' || ch == '~') {
            uri += static_cast<char>(ch);
        } else {
            uri += '%';
            uri += hex[ch >> 4];
            uri += hex[ch & 15];
        }
    }
    return uri + (immutable ? "?mode=ro&immutable=1" : "?mode=ro");
}

bool read_as_immutable(const std::filesystem::path& path) {
    const std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
    if (::access(folder.c_str(), W_OK) == 0)
        return false;
    std::error_code error;
    const auto wal_bytes = std::filesystem::file_size(path.string() + "-wal", error);
    return error || wal_bytes == 0;
}

namespace {

// Why SQLite could not open `path`, in words a user can act on: SQLite says only "unable to open
// database file" for a missing folder, an unreadable file and a folder it may not write (the CLI
// review's read-only folder).
std::string open_failure(const std::filesystem::path& path, OpenMode mode, const std::string& why) {
    std::error_code ec;
    const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
    if (!std::filesystem::is_directory(folder, ec))
        return why + ": its folder " + folder.string() + " does not exist";
    const bool exists = std::filesystem::exists(path, ec);
    if (exists && ::access(path.c_str(), R_OK) != 0)
        return why + ": this user may not read it";
    if (mode == OpenMode::ReadWrite &&
        (::access(folder.c_str(), W_OK) != 0 || (exists && ::access(path.c_str(), W_OK) != 0)))
        return why + ": " + (exists ? "it or its folder " : "its folder ") + folder.string() +
               " is not writable by this user (a read-only file system, or another user's folder); pass "
               "--store a writable path";
    return why;
}

} // namespace

sqlite3* open_connection(const std::filesystem::path& path, OpenMode mode, std::string_view what) {
    int flags = SQLITE_OPEN_NOMUTEX;
    std::string name = path.string();
    switch (mode) {
    case OpenMode::ReadWrite:
        flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
        break;
    case OpenMode::ReadOnly:
        flags |= SQLITE_OPEN_READONLY;
        break;
    case OpenMode::Immutable:
        flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
        name = read_only_uri(path, true);
        break;
    }
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(name.c_str(), &db, flags, nullptr) != SQLITE_OK) {
        const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
        sqlite3_close_v2(db);
        throw StoreError("store " + path.string() + ": " + std::string(what) + ": " +
                         open_failure(path, mode, why));
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, kBusyTimeoutMs);
    try {
        harden_connection(db, path);
    } catch (...) {
        sqlite3_close_v2(db);
        throw;
    }
    return db;
}

sqlite3* open_connection_like(const Store& store, bool write, std::string_view what) {
    if (write)
        store.check_before_write();
    const OpenMode mode = write               ? OpenMode::ReadWrite
                          : store.immutable() ? OpenMode::Immutable
                                              : OpenMode::ReadOnly;
    return open_connection(store.path(), mode, what);
}

// The checks come before the open: a refused connection opens nothing.
sqlite3* open_table_connection(const Store& store, bool write, int min_schema, std::string_view tables,
                               std::string_view refusal) {
    if (write && store.read_only()) {
        throw StoreError("store " + store.path().string() + ": " + std::string(refusal));
    }
    if (store.schema_version() < min_schema) {
        throw StoreError("store " + store.path().string() + ": schema version " +
                         std::to_string(store.schema_version()) + " has no " + std::string(tables) +
                         " tables (needs " + std::to_string(min_schema) + "; open it read-write to migrate)");
    }
    return open_connection_like(store, write, "cannot open for " + std::string(tables) + "s");
}

TableConnection::TableConnection(const Store& store, bool write, int min_schema, std::string_view tables,
                                 std::string_view refusal)
    : Connection(open_table_connection(store, write, min_schema, tables, refusal), store.path()) {
    exec("PRAGMA foreign_keys = ON");
}

void Connection::exec(std::string_view sql) {
    const std::string text(sql);
    if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
        throw_store_error(path_, statement_failure(text), db_);
    }
}

WriteTransaction::WriteTransaction(Connection& connection)
    : connection_(connection) {
    connection_.exec("BEGIN IMMEDIATE");
}

WriteTransaction::~WriteTransaction() {
    if (!done_) {
        try {
            connection_.exec("ROLLBACK");
        } catch (const StoreError&) {
            // The rollback of a failed write; the write's own error is what the caller sees.
        }
    }
}

void WriteTransaction::commit() {
    connection_.exec("COMMIT");
    done_ = true;
}

WriteScope::WriteScope(Store::Impl& impl, const char* operation)
    : impl_(impl) {
    impl.require_writable(operation);
    impl.check_intact();
    if (sqlite3_get_autocommit(impl.db)) {
        impl.exec("BEGIN IMMEDIATE");
        owns_ = true;
    }
}

WriteScope::~WriteScope() {
    if (owns_)
        sqlite3_exec(impl_.db, "ROLLBACK", nullptr, nullptr, nullptr);
}

void WriteScope::commit() {
    if (owns_) {
        impl_.exec("COMMIT");
        owns_ = false;
    }
}

} // namespace pkbw::detail

namespace pkbw {

using detail::throw_store_error;

Store::Impl::~Impl() {
    cache.clear(); // statements before the connection
    sqlite3_close_v2(db);
}

Store::Impl::Use Store::Impl::cached(const char* sql) {
    auto& slot = cache[sql];
    if (!slot)
        slot = std::make_unique<detail::Stmt>(db, sql, path);
    return Use(*slot);
}

void Store::Impl::exec(std::string_view sql) {
    std::string text(sql);
    if (sqlite3_exec(db, text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
        throw_store_error(path, detail::statement_failure(text), db);
}

std::int64_t Store::Impl::pragma_int(const char* pragma) {
    detail::Stmt stmt(db, std::string("PRAGMA ") + pragma, path);
    if (!stmt.step())
        throw_store_error(path, std::string("PRAGMA ") + pragma + " returned nothing", nullptr);
    return stmt.i64(0);
}

void Store::Impl::require_writable(const char* operation) const {
    if (read_only)
        throw StoreError("store " + path.string() + ": " + operation + " on a store opened read-only");
}

void Store::Impl::check_intact() {
    // A damaged page that no statement happens to touch would otherwise go unnoticed while new runs
    // are written on top of it. quick_check reads every page: about a second per 150 MB here.
    if (intact)
        return;
    std::string check;
    try {
        detail::Stmt stmt(db, "PRAGMA quick_check", path);
        while (stmt.step())
            check += (check.empty() ? "" : "; ") + stmt.text(0);
    } catch (const StoreError&) {
        // A page damaged where the check itself stops: SQLite's own reason, as the check's finding.
        check = std::string("SQLite could not finish it: ") + sqlite3_errmsg(db);
    }
    if (check != "ok")
        throw StoreError("store " + path.string() +
                         ": the file is damaged, pkbw writes nothing into it (PRAGMA quick_check: " +
                         check.substr(0, 300) + "); `pkbw store check --store " + path.string() +
                         "` says more; record into another --store");
    intact = true;
}

namespace {

// A file from elsewhere may be another program's SQLite database, or damaged. pkbw's schema has
// no views, triggers or virtual tables, and every version has a `runs` table; a database without
// a user_version must be empty. Refusing here keeps open() from migrating (writing into) it.
void require_pkbw_schema(Store::Impl& impl) {
    const std::string where = "store " + impl.path.string() + ": not a pkbw run store: ";
    detail::Stmt odd(impl.db,
                     "SELECT type, name FROM sqlite_schema WHERE type IN ('view', 'trigger') OR "
                     "(type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%') LIMIT 1",
                     impl.path);
    if (odd.step())
        throw StoreError(where + "it has a " + odd.text(0) + " '" + odd.text(1) + "' (pkbw creates none)");
    detail::Stmt objects(impl.db,
                         "SELECT count(*), count(*) FILTER (WHERE type = 'table' AND name = 'runs') "
                         "FROM sqlite_schema",
                         impl.path);
    objects.step();
    if (impl.version == 0 && objects.i64(0) > 0)
        throw StoreError(where + "schema version 0 (PRAGMA user_version) but " +
                         std::to_string(objects.i64(0)) + " tables or indexes of another program");
    if (impl.version > 0 && objects.i64(1) == 0)
        throw StoreError(where + "schema version " + std::to_string(impl.version) + " but no 'runs' table");
}

std::unique_ptr<Store::Impl> connect(const std::filesystem::path& path, detail::OpenMode mode) {
    auto impl = std::make_unique<Store::Impl>();
    impl->path = path;
    std::error_code folder_error;
    impl->folder =
        std::filesystem::weakly_canonical(std::filesystem::absolute(path).parent_path(), folder_error);
    if (folder_error)
        impl->folder = std::filesystem::absolute(path).parent_path().lexically_normal();
    impl->read_only = mode != detail::OpenMode::ReadWrite;
    impl->immutable = mode == detail::OpenMode::Immutable;
    impl->db = detail::open_connection(path, mode, impl->read_only ? "cannot open read-only" : "cannot open");
    // Reading user_version is the first access; a file that is not SQLite fails here.
    impl->version = static_cast<int>(impl->pragma_int("user_version"));
    int latest = Store::latest_schema_version();
    if (impl->version > latest)
        throw StoreError("store " + path.string() + ": schema version " + std::to_string(impl->version) +
                         " is newer than this build of pkbw knows (" + std::to_string(latest) +
                         "); use a newer pkbw or another --store");
    require_pkbw_schema(*impl);
    impl->exec("PRAGMA foreign_keys = ON");
    return impl;
}

std::string pragma_text(Store::Impl& impl, const char* pragma) {
    detail::Stmt stmt(impl.db, std::string("PRAGMA ") + pragma, impl.path);
    std::string text;
    while (stmt.step())
        text += (text.empty() ? "" : "; ") + stmt.text(0);
    return text;
}

void migrate(Store::Impl& impl) {
    // Nothing is written into a damaged file: before the first write to it (here a migration or the
    // switch to WAL; a current store in WAL needs neither, so an open that only reads, the GUI's,
    // does not pay for the check) SQLite's quick_check must pass (check_intact).
    const bool wal = pragma_text(impl, "journal_mode") == "wal";
    if (!wal || impl.version < Store::latest_schema_version())
        impl.check_intact();
    impl.exec("PRAGMA synchronous = NORMAL");
    for (std::size_t i = 0; i < detail::kSchemaMigrationCount; ++i) {
        const auto& migration = detail::kSchemaMigrations[i];
        if (migration.version <= impl.version)
            continue;
        detail::WriteScope scope(impl, "migration");
        // Another writer may have migrated between our check and our lock.
        impl.version = static_cast<int>(impl.pragma_int("user_version"));
        if (migration.version <= impl.version)
            continue;
        char* error = nullptr;
        if (sqlite3_exec(impl.db, migration.sql, nullptr, nullptr, &error) != SQLITE_OK) {
            std::string message = error ? error : "unknown error";
            sqlite3_free(error);
            throw StoreError("store " + impl.path.string() + ": migration " + migration.file +
                             " failed: " + message);
        }
        impl.exec("PRAGMA user_version = " + std::to_string(migration.version));
        scope.commit();
        impl.version = migration.version;
    }
    // WAL lets readers run beside the writer; it is persistent in the file, so read-only
    // connections use it too. synchronous=NORMAL is safe in WAL against a crash of the process
    // (a power cut may lose the last commits, never corrupt the file). Set after the migrations so
    // that a migration that fails leaves the file as it was.
    if (!wal) {
        detail::Stmt mode(impl.db, "PRAGMA journal_mode = WAL", impl.path);
        if (!mode.step() || mode.text(0) != "wal")
            throw_store_error(impl.path, "cannot enable WAL (is it on a network file system?)", nullptr);
    }
}

} // namespace

Store::Store(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Store Store::open(const std::filesystem::path& path) {
    if (path.has_parent_path()) {
        std::error_code error;
        std::filesystem::create_directories(path.parent_path(), error);
        if (error)
            throw StoreError("store " + path.string() + ": cannot create directory " +
                             path.parent_path().string() + ": " + error.message());
    }
    auto impl = connect(path, detail::OpenMode::ReadWrite);
    migrate(*impl);
    return Store(std::move(impl));
}

Store Store::open_read_only(const std::filesystem::path& path, Missing missing) {
    std::error_code error;
    if (missing == Missing::Create) {
        open(path); // creates or migrates, then closes
    } else if (!std::filesystem::exists(path, error)) {
        throw StoreError("store " + path.string() + ": no such file (a run creates it, or pass --store)");
    }
    // SQLite reads an empty file as an empty database; a reader names it instead (a WAL store whose
    // pages are all still in its -wal is not empty).
    std::error_code size_error, wal_error;
    const auto bytes = std::filesystem::file_size(path, size_error);
    const auto wal_bytes = std::filesystem::file_size(path.string() + "-wal", wal_error);
    if (std::filesystem::is_regular_file(path, error) && !size_error && bytes == 0 &&
        (wal_error || wal_bytes == 0))
        throw StoreError("store " + path.string() +
                         ": the file is empty (0 bytes), not a pkbw store (a run creates one, or pass "
                         "--store)");
    auto impl = connect(path, detail::read_as_immutable(path) ? detail::OpenMode::Immutable
                                                              : detail::OpenMode::ReadOnly);
    if (impl->version < latest_schema_version())
        throw StoreError("store " + path.string() + ": schema version " + std::to_string(impl->version) +
                         " is older than this build's (" + std::to_string(latest_schema_version()) +
                         "); `pkbw store migrate --store " + path.string() +
                         "` (or a run, or the GUI) migrates it");
    return Store(std::move(impl));
}

const std::filesystem::path& Store::path() const {
    return impl_->path;
}
bool Store::read_only() const {
    return impl_->read_only;
}
bool Store::immutable() const {
    return impl_->immutable;
}
void Store::check_before_write() const {
    impl_->require_writable("write");
    impl_->check_intact();
}
int Store::schema_version() const {
    return static_cast<int>(impl_->pragma_int("user_version"));
}
int Store::latest_schema_version() {
    return static_cast<int>(detail::kSchemaMigrationCount);
}

Store::Transaction::Transaction(Store& store)
    : store_(&store) {
    store.impl_->require_writable("transaction");
    store.impl_->check_intact();
    if (sqlite3_get_autocommit(store.impl_->db))
        store.impl_->exec("BEGIN IMMEDIATE");
    else
        done_ = true; // nested: the outer transaction commits or rolls back
}

Store::Transaction::~Transaction() {
    if (!done_)
        sqlite3_exec(store_->impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
}

void Store::Transaction::commit() {
    if (done_)
        return;
    store_->impl_->exec("COMMIT");
    done_ = true;
}

void Store::write_batch(const std::function<void()>& body) {
    Transaction transaction(*this);
    body();
    transaction.commit();
}

std::string Store::integrity_check() const {
    detail::Stmt stmt(impl_->db, "PRAGMA integrity_check", impl_->path);
    std::string result;
    while (stmt.step())
        result += (result.empty() ? "" : "\n") + stmt.text(0);
    return result;
}

} // namespace pkbw
