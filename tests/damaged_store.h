// For the store tests of core and the GUI: a store file whose one table is damaged on disk, as a bad
// sector or a partial copy leaves it (the table's root page overwritten), so that reading the table
// fails in SQLite's step ("database disk image is malformed") while the rest of the store reads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sqlite3.h>
#include <stdexcept>
#include <string>
#include <vector>

namespace pkbw::test {

// Overwrites `table`'s root page in the store at `db` (closed, its WAL checkpointed) with 0xFF bytes.
inline void damage_table(const std::filesystem::path& db, const std::string& table) {
    sqlite3* handle = nullptr;
    std::int64_t root = 0, page_size = 0;
    if (sqlite3_open_v2(db.c_str(), &handle, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
        throw std::runtime_error("damage_table: cannot open " + db.string());
    sqlite3_exec(handle, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(handle, "SELECT rootpage FROM sqlite_master WHERE name = ?1", -1, &stmt, nullptr);
    sqlite3_bind_text(stmt, 1, table.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(stmt) == SQLITE_ROW)
        root = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_prepare_v2(handle, "PRAGMA page_size", -1, &stmt, nullptr);
    if (sqlite3_step(stmt) == SQLITE_ROW)
        page_size = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(handle);
    if (root < 2 || page_size <= 0)
        throw std::runtime_error("damage_table: no table " + table + " in " + db.string());
    std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp((root - 1) * page_size);
    const std::vector<char> garbage(static_cast<std::size_t>(page_size), static_cast<char>(0xFF));
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    if (!file)
        throw std::runtime_error("damage_table: cannot write " + db.string());
}

} // namespace pkbw::test
