// Bundles (bundle.h): a store subset with its artifacts as blobs, written by `pkbw export-bundle` and
// unpacked by pkbw-gui to review runs with no checkout.
#include "pkbw/core/bundle.h"

#include "pkbw/core/run_archive.h"
#include "pkbw/core/run_layout.h"
#include "pkbw/core/sha256.h"
#include "store_db.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace pkbw {
namespace {

// SQLite's default SQLITE_MAX_LENGTH: a larger file cannot be one blob.
constexpr std::uintmax_t kMaxBlobBytes = 1000000000;

// A bundle file's connection: opened with the caller's flags (a bundle is created, or read), hardened.
sqlite3* open_bundle(const fs::path& file, int flags, bool immutable) {
    const std::string name = immutable ? detail::read_only_uri(file, true) : file.string();
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(name.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
        const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
        sqlite3_close(db);
        throw StoreError("bundle " + file.string() + ": cannot open: " + why);
    }
    try {
        detail::harden_connection(db, file);
    } catch (...) {
        sqlite3_close(db);
        throw;
    }
    return db;
}

class Connection : public detail::Connection {
public:
    // `immutable`: read `file` through SQLite's immutable URI (a store opened so, Store::immutable).
    Connection(const fs::path& file, int flags, bool immutable = false)
        : detail::Connection(open_bundle(file, flags, immutable), file) {}
};

std::string sql_identifier(std::string_view name) {
    std::string out = "\"";
    for (char c : name)
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

std::optional<std::string> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// Blob and link inserts on the bundle's connection.
struct BundleWriter {
    Connection& db;
    detail::Stmt blob = db.prepare("INSERT OR IGNORE INTO blobs (sha256, size, data) VALUES (?1, ?2, ?3)");
    detail::Stmt link = db.prepare("INSERT OR REPLACE INTO run_files (run_id, role, name, trial, rank, "
                                   "sha256) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");

    void add(std::int64_t run, std::string_view role, const std::string& name, const std::string& data,
             std::optional<int> trial = std::nullopt, std::optional<int> rank = std::nullopt) {
        static const char kEmpty[1] = {0};
        const std::string hash = sha256_hex(data);
        blob.bind(1, hash).bind(2, static_cast<std::int64_t>(data.size()));
        blob.bind_blob(3, data.empty() ? kEmpty : data.data(), data.size());
        blob.run();
        link.bind(1, run).bind(2, role).bind(3, name).bind(4, trial).bind(5, rank).bind(6, hash);
        link.run();
    }
};

bool has_table(Connection& db, const char* schema, const char* table) {
    auto s = db.prepare(std::string("SELECT 1 FROM ") + schema +
                        ".sqlite_master WHERE type = 'table' AND name = ?1");
    s.bind(1, table);
    return s.step();
}

// A bundle's file name must stay inside the folder it is unpacked into.
bool safe_relative(const fs::path& name) {
    if (name.empty() || name.is_absolute() || name.has_root_name() || name.has_root_directory())
        return false;
    for (const auto& part : name)
        if (part == ".." || part == ".")
            return false;
    return true;
}

} // namespace

namespace {

// The runs to bundle, each once, in the order given: throws naming a run the store lacks.
std::vector<std::int64_t> bundle_run_ids(const Store& source, const std::vector<std::int64_t>& run_ids,
                                         const fs::path& file) {
    if (run_ids.empty())
        throw StoreError("bundle " + file.string() + ": no runs given");
    std::vector<std::int64_t> runs;
    std::set<std::int64_t> unique;
    for (auto id : run_ids) {
        if (!source.get_run(id))
            throw StoreError("store " + source.path().string() + ": no run " + std::to_string(id));
        if (unique.insert(id).second)
            runs.push_back(id);
    }
    return runs;
}

// The rows of the runs in the temporary table bundle_runs, from the attached store `src` into the
// bundle: every table keyed by run (including those later migrations add), whole rows, and the blobs
// the copied run_files name.
void copy_run_rows(Connection& db) {
    db.exec("INSERT INTO main.runs SELECT * FROM src.runs WHERE id IN (SELECT id FROM bundle_runs)");
    std::vector<std::string> tables;
    {
        auto list = db.prepare("SELECT name FROM src.sqlite_master WHERE type = 'table' AND name NOT LIKE "
                               "'sqlite_%' AND name NOT IN ('runs', 'blobs')");
        while (list.step())
            tables.push_back(list.text(0));
    }
    for (const auto& table : tables) {
        bool keyed = false;
        auto columns = db.prepare("SELECT name FROM pragma_table_info(?1, 'src')");
        columns.bind(1, table);
        while (columns.step())
            keyed = keyed || columns.text(0) == "run_id";
        if (keyed)
            db.exec("INSERT INTO main." + sql_identifier(table) + " SELECT * FROM src." +
                    sql_identifier(table) + " WHERE run_id IN (SELECT id FROM bundle_runs)");
    }
    db.exec("INSERT INTO main.blobs SELECT * FROM src.blobs WHERE sha256 IN (SELECT sha256 FROM "
            "main.run_files)");
}

// One artifact's files into the bundle under `name` (a folder's files below it), each counted in
// `report`; what cannot be read, or is over the blob limit, is named in report.missing instead. False
// when the artifact's path is gone (its row then keeps the path it had).
bool bundle_artifact(BundleWriter& writer, std::int64_t id, const ArtifactRow& artifact, const fs::path& name,
                     BundleReport& report) {
    std::error_code ec;
    const fs::path path = artifact.path;
    std::vector<std::pair<fs::path, fs::path>> files; // (on disk, name in the bundle)
    if (fs::is_directory(path, ec)) {
        for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
            if (it->is_regular_file(ec))
                files.emplace_back(it->path(), name / it->path().lexically_relative(path));
    } else if (fs::is_regular_file(path, ec)) {
        files.emplace_back(path, name);
    } else {
        report.missing.push_back("run " + std::to_string(id) + ": " + artifact.kind + " " + path.string() +
                                 " (no such file)");
        return false;
    }
    for (const auto& [on_disk, in_bundle] : files) {
        const auto size = fs::file_size(on_disk, ec);
        auto data = !ec && size <= kMaxBlobBytes ? read_file(on_disk) : std::nullopt;
        if (!data) {
            report.missing.push_back(
                "run " + std::to_string(id) + ": " + on_disk.string() +
                (ec || size <= kMaxBlobBytes ? " (cannot be read)" : " (over 1 GB, not bundled)"));
            continue;
        }
        writer.add(id, file_role::kArtifact, in_bundle.generic_string(), *data, artifact.trial,
                   artifact.rank);
        ++report.files;
        report.file_bytes += data->size();
    }
    return true;
}

// One run's files: its folder becomes runs/run-<id> in the bundle, its artifacts' paths follow (those
// outside its folder go to files/), and sources an older run did not archive are read from where its
// paths point now.
void bundle_run_files(Connection& db, BundleWriter& writer, const Store& source, std::int64_t id,
                      BundleReport& report) {
    const RunRecord run = *source.get_run(id);
    const fs::path bundle_dir = fs::path(run_layout::kRunsDir) / ("run-" + std::to_string(id));
    auto set_run_dir = db.prepare("UPDATE runs SET run_dir = ?2 WHERE id = ?1");
    set_run_dir.bind(1, id).bind(2, bundle_dir.generic_string());
    set_run_dir.run();
    bool archived_sources = false;
    for (const auto& f : source.run_files(id))
        archived_sources = archived_sources || f.role == file_role::kCandidateSource ||
                           f.role == file_role::kReferenceSource;
    if (!archived_sources)
        for (const auto& text : run_sources(source, id))
            if (text.found)
                writer.add(id, text.role, text.name, text.text);
    auto set_path = db.prepare("UPDATE artifacts SET path = ?2 WHERE id = ?1");
    for (const auto& artifact : source.artifacts(id)) {
        const fs::path path = artifact.path;
        const auto inside =
            path.lexically_normal().lexically_relative(fs::path(run.run_dir).lexically_normal());
        const bool below = !inside.empty() && *inside.begin() != "..";
        const fs::path name =
            below ? bundle_dir / inside
                  : bundle_dir / "files" / (std::to_string(artifact.id) + "-" + path.filename().string());
        if (!bundle_artifact(writer, id, artifact, name, report))
            continue;
        set_path.bind(1, artifact.id).bind(2, name.generic_string());
        set_path.run();
    }
}

} // namespace

BundleReport export_bundle(const Store& source, const std::vector<std::int64_t>& run_ids,
                           const fs::path& file) {
    std::error_code ec;
    if (fs::exists(file, ec))
        throw StoreError("bundle " + file.string() + ": the file exists (pkbw never overwrites a bundle)");
    if (source.schema_version() != Store::latest_schema_version())
        throw StoreError("store " + source.path().string() + ": schema version " +
                         std::to_string(source.schema_version()) + ", not " +
                         std::to_string(Store::latest_schema_version()) +
                         "; open it read-write once to migrate");
    BundleReport report;
    report.runs = bundle_run_ids(source, run_ids, file);
    const fs::path partial = file.string() + ".partial";
    fs::remove(partial, ec);
    if (file.has_parent_path())
        fs::create_directories(file.parent_path(), ec);
    {
        Store created = Store::open(partial); // the schema, by the same migrations as any store
    }
    try {
        Connection db(partial, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI);
        db.exec("PRAGMA journal_mode = DELETE"); // one file, no -wal beside it
        db.exec("PRAGMA foreign_keys = OFF");    // tables are copied in any order
        {
            // The source is read as its Store was opened: read-only, immutable where it is.
            auto attach = db.prepare("ATTACH DATABASE ?1 AS src");
            attach.bind(1, detail::read_only_uri(source.path(), source.immutable()));
            attach.run();
        }
        db.exec("BEGIN IMMEDIATE");
        db.exec("CREATE TEMP TABLE bundle_runs (id INTEGER PRIMARY KEY)");
        {
            auto add = db.prepare("INSERT INTO bundle_runs (id) VALUES (?1)");
            for (auto id : report.runs) {
                add.bind(1, id);
                add.run();
            }
        }
        copy_run_rows(db);
        BundleWriter writer{db};
        for (auto id : report.runs)
            bundle_run_files(db, writer, source, id, report);
        db.exec("COMMIT");
        db.exec("DETACH DATABASE src");
        db.exec("PRAGMA application_id = " + std::to_string(kBundleApplicationId));
    } catch (...) {
        fs::remove(partial, ec);
        throw;
    }
    fs::rename(partial, file, ec);
    if (ec) {
        fs::remove(partial, ec);
        throw StoreError("bundle " + file.string() + ": cannot rename the finished " + partial.string());
    }
    return report;
}

std::vector<std::int64_t> sweep_run_ids(const Store& store, std::int64_t sweep_id) {
    Connection db(store.path(),
                  store.immutable() ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI : SQLITE_OPEN_READONLY,
                  store.immutable());
    if (!has_table(db, "main", "sweeps") || !has_table(db, "main", "sweep_pairs"))
        throw StoreError("store " + store.path().string() + ": no sweeps in this store");
    {
        auto known = db.prepare("SELECT 1 FROM sweeps WHERE id = ?1");
        known.bind(1, sweep_id);
        if (!known.step())
            throw StoreError("store " + store.path().string() + ": no sweep " + std::to_string(sweep_id));
    }
    auto s = db.prepare("SELECT run_id FROM sweep_pairs WHERE sweep_id = ?1 AND run_id IS NOT NULL "
                        "ORDER BY position, generation_label, problem_stem");
    s.bind(1, sweep_id);
    std::vector<std::int64_t> ids;
    while (s.step())
        ids.push_back(s.i64(0));
    return ids;
}

bool is_bundle(const fs::path& file) {
    // The SQLite header: "SQLite format 3\0", application_id big-endian at offset 68.
    std::ifstream in(file, std::ios::binary);
    char header[72] = {};
    if (!in.read(header, sizeof header))
        return false;
    if (std::string_view(header, 16) != std::string_view("SQLite format 3\0", 16))
        return false;
    const auto byte = [&](int i) {
        return static_cast<std::uint32_t>(static_cast<unsigned char>(header[i]));
    };
    const std::uint32_t id = byte(68) << 24 | byte(69) << 16 | byte(70) << 8 | byte(71);
    return id == static_cast<std::uint32_t>(kBundleApplicationId);
}

OpenedBundle OpenedBundle::open(const fs::path& bundle, const fs::path& into) {
    if (!is_bundle(bundle))
        throw StoreError("bundle " + bundle.string() +
                         ": not a pkbw bundle (pkbw export-bundle writes them)");
    OpenedBundle out;
    std::error_code ec;
    if (into.empty()) {
        std::string pattern = (fs::temp_directory_path(ec) / "pkbw-bundle-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr)
            throw StoreError("bundle " + bundle.string() + ": cannot create a temporary folder for it");
        out.folder_ = pattern;
        out.remove_ = true;
    } else {
        fs::create_directories(into, ec);
        out.folder_ = fs::absolute(into);
    }
    fs::copy_file(bundle, out.store_path(), fs::copy_options::overwrite_existing, ec);
    if (ec)
        throw StoreError("bundle " + bundle.string() + ": cannot copy it to " + out.store_path().string() +
                         ": " + ec.message());
    Store store = Store::open(out.store_path()); // checks the file as any store (and migrates an older one)
    for (const auto& run : store.list_runs({}, {}, 1 << 30)) {
        for (const auto& file : store.run_files(run.id)) {
            if (file.role != file_role::kArtifact)
                continue;
            const fs::path name(file.name);
            if (!safe_relative(name))
                throw StoreError("bundle " + bundle.string() + ": run " + std::to_string(run.id) +
                                 ": file name '" + file.name + "' leaves the bundle's folder");
            const BlobContent blob = store.read_blob(file.sha256);
            if (!blob.intact) {
                out.problems_.push_back("run " + std::to_string(run.id) + ": " + file.name + ": " +
                                        blob.problem);
                continue;
            }
            const fs::path target = out.folder_ / name;
            fs::create_directories(target.parent_path(), ec);
            std::ofstream(target, std::ios::binary)
                .write(blob.data.data(), static_cast<std::streamsize>(blob.data.size()));
        }
    }
    return out;
}

OpenedBundle::OpenedBundle(OpenedBundle&& other) noexcept
    : folder_(std::move(other.folder_))
    , problems_(std::move(other.problems_))
    , remove_(other.remove_) {
    other.remove_ = false;
}

OpenedBundle& OpenedBundle::operator=(OpenedBundle&& other) noexcept {
    if (this != &other) {
        std::swap(folder_, other.folder_);
        std::swap(problems_, other.problems_);
        std::swap(remove_, other.remove_); // `other` removes what this held, when it goes
    }
    return *this;
}

OpenedBundle::~OpenedBundle() {
    if (remove_ && !folder_.empty()) {
        std::error_code ec;
        fs::remove_all(folder_, ec);
    }
}

} // namespace pkbw
