// Writes the seed stores of fuzz_store (tests/fuzz/seeds/fuzz_store/): small stores written through
// core (schema 1 and the latest, WAL and rollback journal, runs with every kind of row and traces),
// then variants a reader must refuse cleanly (another program's database, a newer schema, a trigger,
// out-of-range values, a truncated and a damaged file). Pages are 512 bytes so that each is a few KB.
//
//   make_store_seeds <dir>
#include "pkbw/core/store.h"
#include "pkbw/core/trace_store.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sqlite3.h>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace pkbw;

namespace {

void sql(const fs::path& db, const std::string& text) {
    sqlite3* handle = nullptr;
    if (sqlite3_open(db.c_str(), &handle) != SQLITE_OK)
        throw std::runtime_error("cannot open " + db.string());
    char* error = nullptr;
    if (sqlite3_exec(handle, text.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
        std::string message = error ? error : "?";
        sqlite3_free(error);
        sqlite3_close(handle);
        throw std::runtime_error(db.string() + ": " + message + " in: " + text);
    }
    sqlite3_close(handle);
}

// Small pages, everything in the main file (the WAL checkpointed), in the journal mode given.
void compact(const fs::path& db, const char* journal_mode) {
    sql(db, "PRAGMA journal_mode = DELETE; PRAGMA page_size = 512; VACUUM;");
    sql(db, std::string("PRAGMA journal_mode = ") + journal_mode + "; PRAGMA wal_checkpoint(TRUNCATE);");
    std::error_code error;
    for (const char* suffix : {"-wal", "-shm", "-journal"})
        fs::remove(db.string() + suffix, error);
}

RunRecord run_record(int i) {
    RunRecord r;
    r.problem_id = 17;
    r.problem_stem = i == 0 ? "17_gemm_allreduce" : "3_allgather";
    r.mode = i == 0 ? RunMode::Perf : RunMode::Eval;
    r.backend = i == 0 ? "cuda" : "host";
    r.world_size = 2;
    r.dtype = "bf16";
    r.m = 64;
    r.n = 32;
    r.input_shapes = {{"a", {64, 32}}};
    r.trials = 2;
    r.seed = 7;
    r.solution_path = "/gen/solutions_cuda_bf16_none_acme_model-1/17_gemm_allreduce_cuda.py";
    r.solution_sha256 = std::string(64, 'a');
    r.generation.label = "solutions_cuda_bf16_none_acme_model-1";
    r.writer_host = "seed-host";
    r.writer_pid = 1;
    r.gpu_names = {"NVIDIA H200", "NVIDIA H200"};
    r.command_line = {"pkbw", "run", "--problem", "17"};
    r.started_at = "2026-07-01T12:00:0" + std::to_string(i) + ".000Z";
    r.run_dir = "/runs/seed";
    return r;
}

void fill(Store& store, int runs) {
    for (int i = 0; i < runs; ++i) {
        const auto id = store.begin_run(run_record(i));
        RankResultRow rank;
        rank.run_id = id;
        rank.rank = 1;
        rank.outcome = RankOutcome::Mismatch;
        rank.phase = "compare";
        rank.message = "out: 1/4 mismatched";
        rank.exit_code = 0;
        rank.wall_ms = 12.5;
        store.add_rank_result(rank);
        TensorResultRow t;
        t.run_id = id;
        t.rank = 1;
        t.name = "out";
        t.ref_shape = t.cand_shape = {2, 2};
        t.ref_dtype = t.cand_dtype = "bf16";
        t.numel = 4;
        t.mismatch_count = 1;
        t.max_ulp = 3;
        t.error_map = {2, 2, 1, 2, {0.5f, 25.0f}};
        t.message = "out: 1/4 mismatched";
        store.add_tensor_result(t);
        const std::vector<double> ms = {1.0, 1.25, 0.75};
        store.add_perf_samples(id, Side::Candidate, 0, 0, ms);
        store.add_perf_samples(id, Side::Reference, 0, kPkbProtocolBlock, ms);
        store.add_perf_summary({id, Side::Candidate, -1, "median_ms", 1.0});
        store.add_artifact(
            {0, id, 0, 1, "outputs", "/runs/seed/outputs/trial_0/rank_1_candidate.safetensors"});
        store.finish_run(id, i == 0 ? RunStatus::Mismatch : RunStatus::Pass, 1, "mismatch",
                         "2026-07-01T12:01:00.000Z");

        std::vector<RankTrace> traces(2);
        for (int r = 0; r < 2; ++r) {
            traces[r].rank = r;
            traces[r].pid = 100 + r;
            traces[r].source = "engine+cupti";
            traces[r].names["stream:7"] = "compute";
            TraceEvent kernel;
            kernel.kind = TraceEventKind::Kernel;
            kernel.name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
            kernel.start_ns = 1000 + r * 10;
            kernel.end_ns = 5000;
            kernel.stream = 7;
            kernel.device = r;
            kernel.grid = {4, 1, 1};
            kernel.block = {256, 1, 1};
            TraceEvent range;
            range.kind = TraceEventKind::EngineRange;
            range.name = "iteration 0";
            range.category = "iteration";
            range.start_ns = 900;
            range.end_ns = 6000;
            range.payload = {{"bytes", 4096}};
            traces[r].events = {range, kernel};
        }
        store_run_traces(store, id, traces);
    }
}

fs::path make_store(const fs::path& dir, const std::string& name, int runs, const char* journal_mode) {
    const fs::path db = dir / name;
    std::error_code error;
    fs::remove(db, error);
    {
        Store store = Store::open(db);
        fill(store, runs);
    }
    compact(db, journal_mode);
    return db;
}

fs::path copy_as(const fs::path& from, const std::string& name) {
    const fs::path to = from.parent_path() / name;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    return to;
}

std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: make_store_seeds <dir>\n";
        return 2;
    }
    const fs::path dir = argv[1];
    fs::create_directories(dir);
    try {
        const auto full = make_store(dir, "v2_full_wal.db", 1, "WAL");
        make_store(dir, "v2_two_runs_delete.db", 2, "DELETE");

        // Schema 1 (before traces): what an older pkbw wrote; opening it read-write migrates it.
        const auto v1 = copy_as(full, "v1_store.db");
        sql(v1, "PRAGMA journal_mode = DELETE; DROP TABLE trace_events; DROP TABLE trace_ranks; "
                "DROP TABLE sweep_pairs; DROP TABLE sweeps; DROP TABLE agent_attempts; "
                "DROP TABLE generation_exchanges; DROP TABLE generations; DROP TABLE run_files; DROP TABLE "
                "blobs; "
                "ALTER TABLE tensor_results DROP COLUMN ties; "
                "ALTER TABLE tensor_results DROP COLUMN length_bound; ALTER TABLE tensor_results DROP COLUMN "
                "ref_length; "
                "ALTER TABLE tensor_results DROP COLUMN cand_length; "
                "PRAGMA user_version = 1; VACUUM;");

        // Refused: newer schema, another program's database, a foreign file claiming schema 1.
        sql(copy_as(full, "newer_schema.db"), "PRAGMA user_version = 99;");
        const auto foreign = dir / "foreign.db";
        fs::remove(foreign);
        sql(foreign, "PRAGMA page_size = 512; CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); "
                     "INSERT INTO notes (text) VALUES ('hello');");
        sql(copy_as(foreign, "foreign_v1.db"), "PRAGMA user_version = 1;");
        sql(copy_as(full, "trigger.db"), "PRAGMA journal_mode = DELETE; CREATE TRIGGER t AFTER INSERT ON "
                                         "artifacts BEGIN DELETE FROM runs; END;");

        // Values a reader must refuse: unknown enum texts, bad JSON, error maps whose size is wrong
        // or whose rows x cols overflows, trace details that are not objects.
        const auto bad = copy_as(full, "bad_values.db");
        sql(bad, "PRAGMA journal_mode = DELETE; "
                 "UPDATE runs SET status = 'bogus', gpu_names = '{\"a\":1}', input_shapes = '[[['; "
                 "UPDATE tensor_results SET error_map_rows = -2147483648, error_map_cols = -2147483648, "
                 "error_map = NULL; "
                 "UPDATE trace_events SET details = '[1,2]' WHERE kind = 'kernel'; "
                 "UPDATE trace_ranks SET names = '[\"x\"]';");
        const auto overflow = copy_as(full, "error_map_overflow.db");
        sql(overflow,
            "PRAGMA journal_mode = DELETE; UPDATE tensor_results SET error_map_rows = 65536, "
            "error_map_cols = 65536, error_map = NULL; "
            "UPDATE trace_events SET start_ns = -9223372036854775808, end_ns = 9223372036854775807;");

        // Damaged: cut short, and bytes overwritten in the middle of the file.
        const std::string bytes = read(full);
        write(dir / "truncated.db", bytes.substr(0, bytes.size() / 2));
        std::string damaged = bytes;
        for (std::size_t i = 1024; i < damaged.size(); i += 997)
            damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
        write(dir / "damaged.db", damaged);
    } catch (const std::exception& e) {
        std::cerr << "make_store_seeds: " << e.what() << "\n";
        return 1;
    }
    for (const auto& entry : fs::directory_iterator(dir))
        std::cout << entry.path().filename().string() << " " << entry.file_size() << " bytes\n";
    return 0;
}
