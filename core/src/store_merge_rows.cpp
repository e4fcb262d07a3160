// The store merge's row copies (store_merge_copy.h): tables keyed by run, their runs renumbered and
// artifact paths moved with the run folders; tables remapped through their own ids; sweeps matched by
// uuid and their pairs, where a pair judged on both sides stops the merge.
#include "pkbw/core/sweep_store.h"
#include "store_merge_copy.h"

namespace pkbw::store_merge_detail {

std::optional<std::int64_t> Merger::remap_run(Db& input, sqlite3_stmt* s, int column,
                                              const std::string& table) {
    if (sqlite3_column_type(s, column) == SQLITE_NULL)
        return std::nullopt;
    auto found = run_ids_.find(sqlite3_column_int64(s, column));
    if (found == run_ids_.end())
        throw StoreError("store merge: input " + input.path().string() + ": table " + table +
                         " refers to run " + std::to_string(sqlite3_column_int64(s, column)) +
                         ", which it does not hold");
    return found->second;
}

void Merger::copy_run_rows(Db& input, const std::string& table, const std::vector<Column>& all) {
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
void Merger::copy_remapped(
    Db& input, const std::string& table, std::map<std::int64_t, std::int64_t>* ids,
    const std::map<std::string, const std::map<std::int64_t, std::int64_t>*>& references,
    const std::string& verb) {
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

void Merger::copy_sweeps(Db& input) {
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
void Merger::copy_pairs(Db& input) {
    Raw rows(input, "SELECT sweep_id, generation_label, problem_stem, problem_id, solution_path, placed_by, "
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

} // namespace pkbw::store_merge_detail
