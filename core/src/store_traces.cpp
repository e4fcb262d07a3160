// Trace tables of the run store (schema 2). A connection of their own on the store's file keeps this
// out of store.cpp: WAL lets it read beside the Store's connection, and writes take their own
// BEGIN IMMEDIATE transaction.
#include "pkbw/core/trace_store.h"
#include "store_db.h"

namespace pkbw {
namespace {

constexpr int kTraceSchemaVersion = 2;

// Columns kept out of `details` (they have their own columns).
const char* const kColumnFields[] = {"kind", "name", "start_ns", "end_ns", "stream", "device", "category"};

// The trace tables' connection (store_db.h).
class Connection : public detail::TableConnection {
public:
    Connection(const Store& store, bool write)
        : TableConnection(store, write, kTraceSchemaVersion, "trace",
                          "cannot write traces to a store opened read-only") {}
};
using detail::WriteTransaction;

} // namespace

void store_run_traces(Store& store, std::int64_t run_id, const std::vector<RankTrace>& traces) {
    Connection c(store, true);
    WriteTransaction tx(c);
    {
        auto run = c.prepare("SELECT 1 FROM runs WHERE id = ?1");
        run.bind(1, run_id);
        if (!run.step()) {
            throw StoreError("store " + c.path().string() + ": no run " + std::to_string(run_id) +
                             " to attach traces to");
        }
    }
    auto remove = c.prepare("DELETE FROM trace_ranks WHERE run_id = ?1 AND rank = ?2");
    auto rank_row = c.prepare(
        "INSERT INTO trace_ranks (run_id, rank, pid, source, dropped_records, complete, names, event_count) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    auto event_row = c.prepare("INSERT INTO trace_events (run_id, rank, kind, name, start_ns, end_ns, "
                               "stream, device, category, details) "
                               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    for (const auto& trace : traces) {
        remove.bind(1, run_id).bind(2, trace.rank).run();
        nlohmann::json names = nlohmann::json::object();
        for (const auto& [key, name] : trace.names) {
            names[key] = name;
        }
        rank_row.bind(1, run_id)
            .bind(2, trace.rank)
            .bind(3, trace.pid)
            .bind(4, trace.source)
            .bind(5, static_cast<std::int64_t>(trace.dropped_records))
            .bind(6, trace.complete)
            .bind(7, names.dump())
            .bind(8, static_cast<std::int64_t>(trace.events.size()))
            .run();
        for (const auto& e : trace.events) {
            nlohmann::json details = to_json(e);
            for (const char* field : kColumnFields) {
                details.erase(field);
            }
            event_row.bind(1, run_id)
                .bind(2, trace.rank)
                .bind(3, to_string(e.kind))
                .bind(4, e.name)
                .bind(5, e.start_ns)
                .bind(6, e.end_ns)
                .bind(7, e.stream >= 0 ? std::optional<std::int64_t>(e.stream) : std::nullopt)
                .bind(8, e.device >= 0 ? std::optional<std::int64_t>(e.device) : std::nullopt)
                .bind(9, e.category)
                .bind(10, details.dump())
                .run();
        }
    }
    tx.commit();
}

std::vector<int> traced_ranks(const Store& store, std::int64_t run_id) {
    Connection c(store, false);
    auto q = c.prepare("SELECT rank FROM trace_ranks WHERE run_id = ?1 ORDER BY rank");
    q.bind(1, run_id);
    std::vector<int> ranks;
    while (q.step()) {
        ranks.push_back(q.i32(0));
    }
    return ranks;
}

std::vector<RankTrace> load_run_traces(const Store& store, std::int64_t run_id, std::optional<int> rank,
                                       std::optional<TimeWindow> window) {
    Connection c(store, false);
    c.exec("BEGIN"); // one snapshot for the rank rows and their events
    std::vector<RankTrace> traces;
    {
        auto q = c.prepare("SELECT rank, pid, source, dropped_records, complete, names FROM trace_ranks "
                           "WHERE run_id = ?1 AND (?2 IS NULL OR rank = ?2) ORDER BY rank");
        q.bind(1, run_id).bind(2, rank ? std::optional<std::int64_t>(*rank) : std::nullopt);
        while (q.step()) {
            RankTrace t;
            t.rank = q.i32(0);
            t.pid = q.i64(1);
            t.source = q.text(2);
            t.dropped_records = static_cast<std::uint64_t>(q.i64(3));
            t.complete = q.i64(4) != 0;
            const std::string where = "store " + c.path().string() + ": run " + std::to_string(run_id) +
                                      " rank " + std::to_string(t.rank) + " names";
            nlohmann::json names;
            try {
                names = nlohmann::json::parse(q.text(5));
            } catch (const nlohmann::json::parse_error&) {
                throw FormatError(where + ": invalid JSON");
            }
            for (const auto& [key, value] : names.items()) {
                if (!value.is_string()) {
                    throw FormatError(where + ": '" + key + "' is not a string");
                }
                t.names[key] = value.get<std::string>();
            }
            traces.push_back(std::move(t));
        }
    }
    auto q = c.prepare("SELECT id, kind, name, start_ns, end_ns, stream, device, category, details "
                       "FROM trace_events WHERE run_id = ?1 AND rank = ?2 "
                       "AND (?3 IS NULL OR (start_ns <= ?4 AND end_ns >= ?3)) ORDER BY start_ns, id");
    for (auto& t : traces) {
        q.reset();
        q.bind(1, run_id).bind(2, t.rank);
        if (window) {
            q.bind(3, window->start_ns).bind(4, window->end_ns);
        } else {
            q.bind_null(3).bind_null(4);
        }
        while (q.step()) {
            const std::string where =
                "store " + c.path().string() + ": trace_events id " + std::to_string(q.i64(0));
            nlohmann::json j;
            try {
                j = nlohmann::json::parse(q.text(8));
            } catch (const nlohmann::json::parse_error&) {
                throw FormatError(where + ": details are not valid JSON");
            }
            if (!j.is_object()) {
                throw FormatError(where + ": details are not a JSON object");
            }
            j["kind"] = q.text(1);
            j["name"] = q.text(2);
            j["start_ns"] = q.i64(3);
            j["end_ns"] = q.i64(4);
            if (!q.is_null(5))
                j["stream"] = q.i64(5);
            if (!q.is_null(6))
                j["device"] = q.i64(6);
            if (!q.text(7).empty())
                j["category"] = q.text(7);
            t.events.push_back(trace_event_from_json(j, where));
        }
        sort_events(t.events);
    }
    c.exec("COMMIT");
    return traces;
}

void delete_run_traces(Store& store, std::int64_t run_id) {
    Connection c(store, true);
    auto q = c.prepare("DELETE FROM trace_ranks WHERE run_id = ?1");
    q.bind(1, run_id).run();
}

} // namespace pkbw
