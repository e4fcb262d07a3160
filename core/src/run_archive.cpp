// Reading back what a run ran: archived sources, diagnostics and logs, with the fallback to the files
// an older run's paths name (run_archive.h).
#include "pkbw/core/run_archive.h"

#include "pkbw/core/run_layout.h"
#include "pkbw/core/safetensors.h"
#include "pkbw/core/sha256.h"
#include "pkbw/core/torch_pt.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

namespace fs = std::filesystem;
using nlohmann::json;

namespace pkbw {
namespace {

// Files larger than this are never archived whole (a source this size is not a kernel).
constexpr std::uintmax_t kMaxWholeFile = 256u << 20;

bool is_log_role(std::string_view role) {
    return role == file_role::kCompileLog || role == file_role::kRankLog;
}

std::optional<std::string> read_whole(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// A log larger than the limit keeps its head and its tail: the start says what ran, the end how it
// ended.
std::optional<std::string> read_capped(const fs::path& path, std::size_t limit) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec)
        return std::nullopt;
    if (size <= limit)
        return read_whole(path);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    const std::size_t half = limit / 2;
    std::string head(half, '\0'), tail(half, '\0');
    in.read(head.data(), static_cast<std::streamsize>(half));
    in.seekg(static_cast<std::streamoff>(size - half));
    in.read(tail.data(), static_cast<std::streamsize>(half));
    return head + "\n[pkbw: " + std::to_string(size - 2 * half) + " bytes of this log left out]\n" + tail;
}

RunFileText from_blob(const Store& store, const RunFileRow& row) {
    RunFileText out;
    out.role = row.role;
    out.name = row.name;
    out.trial = row.trial;
    out.rank = row.rank;
    out.sha256 = row.sha256;
    out.origin = "archived";
    BlobContent blob = store.read_blob(row.sha256);
    out.found = blob.found;
    out.intact = blob.intact;
    out.problem = blob.problem;
    out.text = std::move(blob.data);
    return out;
}

// An older run's file on disk, checked against the hash the run recorded (when it recorded one).
RunFileText from_disk(const Store& store, const RunRecord& run, std::string role, const std::string& recorded,
                      const std::string& expected_sha256) {
    RunFileText out;
    out.role = std::move(role);
    out.name = recorded;
    const fs::path path = store.resolve_recorded_path(recorded, run.run_dir);
    out.origin = path.string();
    auto text = read_whole(path);
    if (!text) {
        out.problem =
            "not archived in the store (recorded before schema 5), and " + path.string() + " cannot be read";
        return out;
    }
    out.found = true;
    out.text = std::move(*text);
    out.sha256 = sha256_hex(out.text);
    out.intact = expected_sha256.empty() || expected_sha256 == out.sha256;
    if (!out.intact)
        out.problem = path.string() + " changed since the run: its sha256 is " + out.sha256 +
                      ", the run recorded " + expected_sha256;
    else if (expected_sha256.empty())
        out.problem =
            "not archived in the store; read from " + path.string() + ", which may have changed since";
    return out;
}

// The run's config.json, parsed (an object, empty when absent or unreadable).
json run_config(const Store& store, std::int64_t run_id) {
    std::optional<std::string> text;
    for (const auto& row : store.run_files(run_id))
        if (row.role == file_role::kConfig) {
            BlobContent blob = store.read_blob(row.sha256);
            if (blob.intact)
                text = std::move(blob.data);
        }
    if (!text)
        for (const auto& artifact : store.artifacts(run_id))
            if (artifact.kind == "config")
                text = read_whole(artifact.path);
    if (!text)
        return json::object();
    json config = json::parse(*text, nullptr, false);
    return config.is_object() ? config : json::object();
}

} // namespace

std::vector<RunFileText> run_sources(const Store& store, std::int64_t run_id) {
    std::vector<RunFileText> out;
    const auto files = store.run_files(run_id);
    for (std::string_view role : {file_role::kCandidateSource, file_role::kReferenceSource})
        for (const auto& row : files)
            if (row.role == role)
                out.push_back(from_blob(store, row));
    if (!out.empty())
        return out;
    // Recorded before sources were archived: the files the run named, from where they are now.
    const auto run = store.get_run(run_id);
    if (!run)
        return out;
    const json config = run_config(store, run_id);
    const json pkb = config.contains("pkb") && config["pkb"].is_object() ? config["pkb"] : json::object();
    const std::string role(run->solution_kind == SolutionKind::Reference ? file_role::kReferenceSource
                                                                         : file_role::kCandidateSource);
    std::string solution = run->solution_path;
    if (pkb.contains("solution_file") && pkb["solution_file"].is_string() &&
        !pkb["solution_file"].get<std::string>().empty())
        solution = pkb["solution_file"].get<std::string>();
    if (!solution.empty())
        out.push_back(from_disk(store, *run, role, solution, run->solution_sha256));
    if (pkb.contains("reference_file") && pkb["reference_file"].is_string() &&
        run->solution_kind != SolutionKind::Reference)
        out.push_back(
            from_disk(store, *run, std::string(file_role::kReferenceSource), pkb["reference_file"], ""));
    return out;
}

std::vector<RunDiagnostic> run_diagnostics(const Store& store, std::int64_t run_id) {
    std::vector<RunDiagnostic> out;
    for (const auto& row : store.run_files(run_id)) {
        if (row.role != file_role::kDiagnostics)
            continue;
        const BlobContent blob = store.read_blob(row.sha256);
        const json list = json::parse(blob.data, nullptr, false);
        if (!list.is_array())
            continue;
        for (const auto& d : list) {
            if (!d.is_object())
                continue;
            RunDiagnostic diagnostic;
            diagnostic.side = d.value("side", "");
            diagnostic.file = d.value("file", "");
            diagnostic.line = d.value("line", 0);
            diagnostic.column = d.value("column", 0);
            diagnostic.severity = d.value("severity", "");
            diagnostic.message = d.value("message", "");
            out.push_back(std::move(diagnostic));
        }
    }
    // Reference first, then the candidate, as they were compiled.
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return a.side == "reference" && b.side != "reference";
    });
    return out;
}

std::vector<RunFileText> run_logs(const Store& store, std::int64_t run_id) {
    std::vector<RunFileText> out;
    const auto files = store.run_files(run_id);
    bool archived = false;
    for (std::string_view role : {file_role::kCompileLog, file_role::kRankLog, file_role::kConfig})
        for (const auto& row : files)
            if (row.role == role) {
                out.push_back(from_blob(store, row));
                archived = true;
            }
    if (archived)
        return out;
    const auto run = store.get_run(run_id);
    if (!run)
        return out;
    for (std::string_view kind : {"compile_log", "log", "config"}) {
        for (const auto& artifact : store.artifacts(run_id)) {
            if (artifact.kind != kind)
                continue;
            const std::string role(kind == std::string_view("compile_log") ? file_role::kCompileLog
                                   : kind == std::string_view("log")       ? file_role::kRankLog
                                                                           : file_role::kConfig);
            RunFileText text = from_disk(store, *run, role, artifact.path, "");
            text.name = fs::path(artifact.path).filename().string();
            text.trial = artifact.trial;
            text.rank = artifact.rank;
            out.push_back(std::move(text));
        }
    }
    return out;
}

fs::path find_output_file(const Store& store, std::int64_t run_id, int trial, int rank, Side side) {
    const std::string kind = "outputs_" + std::string(to_string(side));
    std::error_code ec;
    for (const auto& artifact : store.artifacts(run_id))
        if (artifact.kind == kind && artifact.trial == trial && artifact.rank == rank &&
            fs::is_regular_file(artifact.path, ec))
            return artifact.path;
    const auto run = store.get_run(run_id);
    if (!run || run->run_dir.empty())
        return {};
    const fs::path native = run_layout::trial_outputs(run->run_dir, trial, rank, to_string(side));
    return fs::is_regular_file(native, ec) ? native : fs::path();
}

OutputSet read_output_file(const fs::path& path) {
    if (path.extension() == ".pt")
        return read_torch_pt(path.string());
    return read_safetensors(path.string()).outputs;
}

std::string archive_file(Store& store, std::int64_t run_id, std::string_view role, const fs::path& path,
                         std::optional<int> trial, std::optional<int> rank) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        return {};
    std::optional<std::string> text;
    if (is_log_role(role))
        text = read_capped(path, kMaxArchivedBytes);
    else if (fs::file_size(path, ec) <= kMaxWholeFile && !ec)
        text = read_whole(path);
    if (!text)
        return {};
    // Sources keep the path they ran from; logs and the config are named by their file name, which
    // says what they are (compile_candidate.log, rank_1.log).
    const std::string name =
        is_log_role(role) || role == file_role::kConfig ? path.filename().string() : path.string();
    return store.archive_run_file(run_id, role, name, *text, trial, rank);
}

std::string diagnostics_json(const std::vector<RunDiagnostic>& diagnostics) {
    json list = json::array();
    for (const auto& d : diagnostics)
        list.push_back({{"side", d.side},
                        {"file", d.file},
                        {"line", d.line},
                        {"column", d.column},
                        {"severity", d.severity},
                        {"message", d.message}});
    return list.dump();
}

} // namespace pkbw
