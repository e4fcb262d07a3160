// Fuzz target: a run store file as the GUI opens it. The input is written to a scratch file and
//  1. opened with Store::open_read_only(path, Missing::Create), the GUI's "open store" (a short
//     read-write open that may migrate): if that throws, the file must be byte-for-byte unchanged
//     (a foreign, newer or damaged file is refused, never "repaired");
//  2. opened read-only, as every GUI view does, and read through every reader the GUI and the CLI
//     use: run lists (filters, sorts), counts, distinct values, a run's rows, perf samples, traces
//     and their analyses.
// Every failure must be a pkbw::Error whose message names the file; anything else (another
// exception, a crash, a sanitizer report, a leak, a hang) is a finding.
#include "pkbw/core/error.h"
#include "pkbw/core/store.h"
#include "pkbw/core/trace_analysis.h"
#include "pkbw/core/trace_store.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

void fail(const std::string& what) {
    std::fprintf(stderr, "fuzz_store: %s\n", what.c_str());
    std::abort();
}

const fs::path& scratch_file() {
    static const fs::path file = [] {
        const char* tmp = std::getenv("TMPDIR");
        fs::path dir =
            fs::path(tmp && *tmp ? tmp : "/tmp") / ("pkbw_fuzz_store_" + std::to_string(::getpid()));
        fs::create_directories(dir);
        return dir / "runs.db";
    }();
    return file;
}

void remove_files(const fs::path& db) {
    std::error_code error;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        fs::remove(db.string() + suffix, error);
}

void write_file(const fs::path& path, const std::uint8_t* data, std::size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out.flush())
        fail("cannot write the scratch file");
}

std::string read_back(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void require_names_file(const pkbw::Error& e, const fs::path& path) {
    if (std::string(e.what()).find(path.string()) == std::string::npos)
        fail(std::string("an error does not name the file: ") + e.what());
}

void read_run(const pkbw::Store& store, std::int64_t id) {
    (void)store.get_run(id);
    (void)store.rank_results(id);
    for (const auto& row : store.tensor_results(id, true)) {
        const auto& map = row.error_map;
        if (map.rows < 0 || map.cols < 0 ||
            map.ratio.size() != static_cast<std::size_t>(map.rows) * static_cast<std::size_t>(map.cols))
            fail("tensor_results returned an error map whose size is not rows x cols");
    }
    (void)store.tensor_results(id, false);
    (void)store.perf_samples(id);
    (void)store.perf_summaries(id);
    (void)store.artifacts(id);
    if (store.schema_version() < 2)
        return;
    (void)pkbw::traced_ranks(store, id);
    const auto traces = pkbw::load_run_traces(store, id);
    (void)pkbw::load_run_traces(store, id, 0, pkbw::TimeWindow{0, 1000000});
    // What `pkbw trace` and the trace view compute from them.
    (void)pkbw::kernel_summary(traces);
    (void)pkbw::iteration_stragglers(traces);
    for (const auto& trace : traces) {
        const auto span = pkbw::trace_span(trace);
        (void)pkbw::time_breakdown(trace, span);
        (void)pkbw::nccl_bandwidth(trace, 8);
    }
}

void read_everything(const fs::path& path) {
    const pkbw::Store store = pkbw::Store::open_read_only(path);
    (void)store.schema_version();
    (void)store.integrity_check();
    (void)store.count_runs();
    pkbw::RunFilter text;
    text.text = "a_%";
    (void)store.count_runs(text);
    pkbw::RunFilter narrow;
    narrow.status = pkbw::RunStatus::Pass;
    narrow.started_from = "2026-01-01";
    (void)store.list_runs(narrow, {pkbw::RunSortColumn::Problem, false}, 10, 0);
    for (auto field : {pkbw::RunField::Problem, pkbw::RunField::Generation, pkbw::RunField::Backend,
                       pkbw::RunField::Status})
        (void)store.distinct_values(field);
    const auto runs = store.list_runs({}, {}, 4, 0);
    for (const auto& run : runs)
        read_run(store, run.id);
    (void)store.get_run(-1);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const fs::path& path = scratch_file();
    remove_files(path);
    write_file(path, data, size);
    try {
        (void)pkbw::Store::open_read_only(path, pkbw::Store::Missing::Create);
    } catch (const pkbw::Error& e) {
        require_names_file(e, path);
        const std::string now = read_back(path);
        if (now.size() != size ||
            (size > 0 && now.compare(0, size, reinterpret_cast<const char*>(data), size) != 0))
            fail(std::string("a file that could not be opened was changed: ") + e.what());
    }
    try {
        read_everything(path);
    } catch (const pkbw::Error& e) {
        require_names_file(e, path);
    }
    remove_files(path);
    return 0;
}
