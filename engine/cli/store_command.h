// `pkbw store check`, `pkbw store remove RUN...`, `pkbw store migrate` (docs/store.md "Maintenance"),
// added under the `store` command that SweepCommands registers (beside `store merge`).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace pkbw::cli {

// Integrity, schema version and missing files, read-only; exit 0 when all is well, 1 when something
// is wrong, 2 when the file is missing or empty.
int store_check_command(const std::filesystem::path& store, bool as_json, std::ostream& out,
                        std::ostream& err);
// Removes the runs and what is theirs alone: rows, archived blobs no other run links to, and (unless
// keep_files) their run folders under the store's folder. Every id must exist, else nothing is removed.
int store_remove_command(const std::filesystem::path& store, const std::vector<std::int64_t>& runs,
                         bool keep_files, std::ostream& out, std::ostream& err);
// Brings an existing store to this build's schema (what readers, which never write, ask for).
int store_migrate_command(const std::filesystem::path& store, std::ostream& out, std::ostream& err);

class StoreCommands {
public:
    // `app` must already have the `store` command (SweepCommands).
    explicit StoreCommands(CLI::App& app);
    std::optional<int> dispatch();

private:
    CLI::App *check_ = nullptr, *remove_ = nullptr, *migrate_ = nullptr;
    std::optional<std::string> check_store_, remove_store_, migrate_store_;
    std::optional<std::string> check_file_, migrate_file_;
    bool check_json_ = false, keep_files_ = false;
    std::vector<std::int64_t> remove_runs_;
};

} // namespace pkbw::cli
