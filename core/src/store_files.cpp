// Archived files (schema 5): content-addressed blobs and the run -> blob links, and the recorded paths
// that make a store and its runs/ folder movable (docs/store.md "Archived files", "Recorded paths").
#include "pkbw/core/run_layout.h"
#include "pkbw/core/sha256.h"
#include "store_db.h"

#include <system_error>

namespace fs = std::filesystem;

namespace pkbw {
namespace detail {

namespace {

bool path_exists(const fs::path& path) {
    std::error_code ec;
    return fs::exists(path, ec);
}

// `path` below `folder` (both absolute and normal): the relative rest, else nothing.
std::optional<fs::path> below(const fs::path& path, const fs::path& folder) {
    const fs::path rest = path.lexically_relative(folder);
    if (rest.empty() || *rest.begin() == "..")
        return std::nullopt;
    return rest;
}

} // namespace

std::string path_to_record(const Store::Impl& impl, std::string_view path) {
    if (path.empty())
        return {};
    std::error_code ec;
    fs::path absolute = fs::weakly_canonical(fs::absolute(fs::path(path)), ec);
    if (ec)
        absolute = fs::absolute(fs::path(path)).lexically_normal();
    if (auto rest = below(absolute, impl.folder))
        return rest->generic_string();
    return absolute.string();
}

std::string resolve_recorded(const Store::Impl& impl, std::string_view recorded,
                             std::string_view recorded_run_dir) {
    if (recorded.empty())
        return {};
    const fs::path path(recorded);
    if (path.is_relative()) {
        const fs::path in_store = impl.folder / path;
        // Before schema 5 relative paths were relative to the writer's working directory: one that
        // exists from here and not under the store keeps that meaning.
        if (!path_exists(in_store) && path_exists(path))
            return fs::absolute(path).lexically_normal().string();
        return in_store.lexically_normal().string();
    }
    if (path_exists(path))
        return path.string();
    // An older absolute path: the store and its runs/ folder were moved together. The run directory
    // is looked for by its name under the store's folder, and a path inside it at the same place.
    const fs::path run_dir = recorded_run_dir.empty() ? path : fs::path(recorded_run_dir);
    if (run_dir.is_absolute() && !run_dir.filename().empty()) {
        const auto rest = below(path.lexically_normal(), run_dir.lexically_normal());
        for (const fs::path& moved_dir :
             {impl.folder / run_layout::kRunsDir / run_dir.filename(), impl.folder / run_dir.filename()}) {
            if (!path_exists(moved_dir))
                continue;
            if (recorded_run_dir.empty())
                return moved_dir.string();
            if (rest && path_exists(moved_dir / *rest))
                return (moved_dir / *rest).lexically_normal().string();
        }
    }
    return path.string();
}

} // namespace detail

fs::path Store::folder() const {
    return impl_->folder;
}

fs::path Store::resolve_recorded_path(std::string_view recorded, std::string_view recorded_run_dir) const {
    return detail::resolve_recorded(*impl_, recorded, recorded_run_dir);
}

std::string Store::archive_blob(std::string_view data) {
    impl_->require_writable("archive_blob");
    const std::string hash = sha256_hex(data);
    detail::WriteScope scope(*impl_, "archive_blob");
    auto use = impl_->cached("INSERT OR IGNORE INTO blobs (sha256, size, data) VALUES (?1, ?2, ?3)");
    static const char kEmpty[1] = {0}; // a null pointer would bind NULL, not an empty blob
    use->bind(1, hash).bind(2, static_cast<std::int64_t>(data.size()));
    use->bind_blob(3, data.empty() ? kEmpty : data.data(), data.size());
    use->run();
    scope.commit();
    return hash;
}

void Store::add_run_file(const RunFileRow& row) {
    detail::WriteScope scope(*impl_, "add_run_file");
    auto use = impl_->cached("INSERT OR REPLACE INTO run_files (run_id, role, name, trial, rank, sha256) "
                             "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    use->bind(1, row.run_id).bind(2, row.role).bind(3, row.name).bind(4, row.trial).bind(5, row.rank);
    use->bind(6, row.sha256);
    use->run();
    scope.commit();
}

std::string Store::archive_run_file(std::int64_t run_id, std::string_view role, std::string_view name,
                                    std::string_view data, std::optional<int> trial,
                                    std::optional<int> rank) {
    detail::WriteScope scope(*impl_, "archive_run_file");
    RunFileRow row;
    row.run_id = run_id;
    row.role = role;
    row.name = name;
    row.trial = trial;
    row.rank = rank;
    row.sha256 = archive_blob(data);
    add_run_file(row);
    scope.commit();
    return row.sha256;
}

std::vector<RunFileRow> Store::run_files(std::int64_t run_id) const {
    detail::Stmt s(impl_->db,
                   "SELECT f.role, f.name, f.trial, f.rank, f.sha256, coalesce(b.size, -1) FROM run_files f "
                   "LEFT JOIN blobs b ON b.sha256 = f.sha256 WHERE f.run_id = ?1 "
                   "ORDER BY f.role, f.trial, f.rank, f.name",
                   impl_->path);
    s.bind(1, run_id);
    std::vector<RunFileRow> rows;
    while (s.step()) {
        RunFileRow row;
        row.run_id = run_id;
        row.role = s.text(0);
        row.name = s.text(1);
        if (auto v = s.opt_i64(2))
            row.trial = static_cast<int>(*v);
        if (auto v = s.opt_i64(3))
            row.rank = static_cast<int>(*v);
        row.sha256 = s.text(4);
        row.size = s.i64(5);
        rows.push_back(std::move(row));
    }
    return rows;
}

BlobContent Store::read_blob(std::string_view sha256) const {
    BlobContent out;
    detail::Stmt s(impl_->db, "SELECT size, data FROM blobs WHERE sha256 = ?1", impl_->path);
    s.bind(1, sha256);
    const std::string where = "store " + impl_->path.string() + ": blob " + std::string(sha256);
    if (!s.step()) {
        out.problem = where + " is missing (the store is damaged or was cut down by hand)";
        return out;
    }
    out.found = true;
    if (const void* data = s.blob(1))
        out.data.assign(static_cast<const char*>(data), s.bytes(1));
    const std::int64_t size = s.i64(0);
    const std::string actual = sha256_hex(out.data);
    out.intact = actual == sha256 && size == static_cast<std::int64_t>(out.data.size());
    if (!out.intact)
        out.problem = where + " is damaged: its " + std::to_string(out.data.size()) + " bytes hash to " +
                      actual +
                      (size != static_cast<std::int64_t>(out.data.size())
                           ? " and its recorded size is " + std::to_string(size)
                           : std::string());
    return out;
}

} // namespace pkbw
