// Sweep tables of the run store (schema 3). A connection of its own, as the trace tables have.
#include "pkbw/core/sweep_store.h"
#include "store_db.h"

#include <random>

namespace pkbw {
namespace {

constexpr int kSweepSchemaVersion = 3;

// The sweep tables' connection (store_db.h).
class Connection : public detail::TableConnection {
public:
    Connection(const Store& store, bool write)
        : TableConnection(store, write, kSweepSchemaVersion, "sweep",
                          "cannot write sweeps to a store opened read-only") {}
};
using detail::WriteTransaction;

std::string random_uuid() {
    std::random_device device;
    std::uniform_int_distribution<unsigned> byte(0, 255);
    static const char* hex = "0123456789abcdef";
    std::string text;
    for (int i = 0; i < 16; ++i) {
        unsigned b = byte(device);
        if (i == 6)
            b = (b & 0x0f) | 0x40; // version 4
        if (i == 8)
            b = (b & 0x3f) | 0x80; // RFC 4122 variant
        if (i == 4 || i == 6 || i == 8 || i == 10)
            text += '-';
        text += hex[b >> 4];
        text += hex[b & 15];
    }
    return text;
}

const char* const kSweepColumns =
    "SELECT id, uuid, name, mode, backend, world_size, options, created_at, updated_at, status FROM sweeps ";

SweepRecord read_sweep(detail::Stmt& s, const std::filesystem::path& path) {
    SweepRecord r;
    r.id = s.i64(0);
    r.uuid = s.text(1);
    r.name = s.text(2);
    r.mode = s.text(3);
    r.backend = s.text(4);
    r.world_size = s.i32(5);
    r.options = nlohmann::json::parse(s.text(6), nullptr, false);
    if (r.options.is_discarded())
        throw StoreError("store " + path.string() + ": sweep " + std::to_string(r.id) +
                         ": column options is not JSON");
    r.created_at = s.text(7);
    r.updated_at = s.text(8);
    r.status = s.text(9);
    return r;
}

std::optional<SweepRecord> find_one(const Store& store, const std::string& where, const std::string& key,
                                    std::optional<std::int64_t> id) {
    Connection c(store, false);
    auto s = c.prepare(std::string(kSweepColumns) + where);
    if (id)
        s.bind(1, *id);
    else
        s.bind(1, key);
    if (!s.step())
        return std::nullopt;
    return read_sweep(s, store.path());
}

void bind_pair(detail::Stmt& s, std::int64_t sweep_id, const SweepPair& p) {
    s.bind(":sweep", sweep_id)
        .bind(":generation", p.generation_label)
        .bind(":stem", p.problem_stem)
        .bind(":problem_id", p.problem_id)
        .bind(":path", p.solution_path)
        .bind(":placed_by", p.placed_by)
        .bind(":position", p.position)
        .bind(":run", p.run_id)
        .bind(":state", p.state)
        .bind(":message", p.message)
        .bind(":seconds", p.seconds);
}

} // namespace

bool sweep_run_status_is_final(RunStatus status) {
    return status != RunStatus::Running && status != RunStatus::Interrupted && status != RunStatus::Aborted;
}

std::int64_t create_sweep(Store& store, SweepRecord sweep, const std::vector<SweepPair>& pairs) {
    Connection c(store, true);
    WriteTransaction transaction(c);
    if (sweep.uuid.empty())
        sweep.uuid = random_uuid();
    const std::string now = utc_now_iso8601();
    auto insert = c.prepare("INSERT INTO sweeps (uuid, name, mode, backend, world_size, options, created_at, "
                            "updated_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, sweep.uuid)
        .bind(2, sweep.name)
        .bind(3, sweep.mode)
        .bind(4, sweep.backend)
        .bind(5, sweep.world_size)
        .bind(6, sweep.options.dump())
        .bind(7, sweep.created_at.empty() ? now : sweep.created_at)
        .bind(8, sweep.updated_at.empty() ? now : sweep.updated_at)
        .bind(9, sweep.status);
    insert.run();
    const std::int64_t id = sqlite3_last_insert_rowid(c.db());
    auto pair = c.prepare("INSERT INTO sweep_pairs (sweep_id, generation_label, problem_stem, problem_id, "
                          "solution_path, placed_by, position, run_id, state, message, seconds) VALUES "
                          "(:sweep, :generation, :stem, :problem_id, :path, :placed_by, :position, :run, "
                          ":state, :message, :seconds)");
    for (const auto& p : pairs) {
        bind_pair(pair, id, p);
        pair.run();
        pair.reset();
    }
    transaction.commit();
    return id;
}

std::optional<SweepRecord> find_sweep(const Store& store, std::int64_t sweep_id) {
    return find_one(store, "WHERE id = ?", "", sweep_id);
}

std::optional<SweepRecord> find_sweep_by_name(const Store& store, const std::string& name) {
    return find_one(store, "WHERE name = ? ORDER BY created_at DESC, id DESC LIMIT 1", name, std::nullopt);
}

std::optional<SweepRecord> find_sweep_by_uuid(const Store& store, const std::string& uuid) {
    return find_one(store, "WHERE uuid = ?", uuid, std::nullopt);
}

std::vector<SweepRecord> list_sweeps(const Store& store) {
    Connection c(store, false);
    auto s = c.prepare(std::string(kSweepColumns) + "ORDER BY created_at DESC, id DESC");
    std::vector<SweepRecord> list;
    while (s.step())
        list.push_back(read_sweep(s, store.path()));
    return list;
}

std::vector<SweepPair> sweep_pairs(const Store& store, std::int64_t sweep_id) {
    Connection c(store, false);
    auto s =
        c.prepare("SELECT generation_label, problem_stem, problem_id, solution_path, placed_by, position, "
                  "run_id, state, message, seconds FROM sweep_pairs WHERE sweep_id = ? "
                  "ORDER BY position, generation_label, problem_stem");
    s.bind(1, sweep_id);
    std::vector<SweepPair> pairs;
    while (s.step()) {
        SweepPair p;
        p.generation_label = s.text(0);
        p.problem_stem = s.text(1);
        if (auto id = s.opt_i64(2))
            p.problem_id = static_cast<int>(*id);
        p.solution_path = s.text(3);
        p.placed_by = s.text(4);
        p.position = s.i32(5);
        p.run_id = s.opt_i64(6);
        p.state = s.text(7);
        p.message = s.text(8);
        p.seconds = s.opt_real(9);
        pairs.push_back(std::move(p));
    }
    return pairs;
}

void record_sweep_pair(Store& store, std::int64_t sweep_id, const SweepPair& pair) {
    Connection c(store, true);
    WriteTransaction transaction(c);
    auto s = c.prepare("UPDATE sweep_pairs SET run_id = :run, state = :state, message = :message, "
                       "seconds = :seconds WHERE sweep_id = :sweep AND generation_label = :generation AND "
                       "problem_stem = :stem");
    s.bind(":run", pair.run_id)
        .bind(":state", pair.state)
        .bind(":message", pair.message)
        .bind(":seconds", pair.seconds)
        .bind(":sweep", sweep_id)
        .bind(":generation", pair.generation_label)
        .bind(":stem", pair.problem_stem);
    s.run();
    if (sqlite3_changes(c.db()) != 1)
        throw StoreError("store " + store.path().string() + ": sweep " + std::to_string(sweep_id) +
                         " has no pair (" + pair.generation_label + ", " + pair.problem_stem + ")");
    auto touch = c.prepare("UPDATE sweeps SET updated_at = ? WHERE id = ?");
    touch.bind(1, utc_now_iso8601()).bind(2, sweep_id);
    touch.run();
    transaction.commit();
}

void set_sweep_status(Store& store, std::int64_t sweep_id, const std::string& status) {
    Connection c(store, true);
    auto s = c.prepare("UPDATE sweeps SET status = ?, updated_at = ? WHERE id = ?");
    s.bind(1, status).bind(2, utc_now_iso8601()).bind(3, sweep_id);
    s.run();
}

} // namespace pkbw
