#include "compile_cache.h"

#include "pkbw/core/error.h"
#include "pkbw/core/sha256.h"
#include "pkbw/tracer_control.h"
#include "subprocess.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace pkbw::cli {
namespace {

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read " + path.string());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string env_or(const char* name, const std::string& fallback) {
    const char* value = std::getenv(name);
    return value && *value ? std::string(value) : fallback;
}

// The compiler must not load a profiler's injection library that pkbw itself was started with.
std::vector<std::string> compiler_environment() {
    return current_environment(
        std::vector<std::string>(std::begin(tracer::kTracingVariables), std::end(tracer::kTracingVariables)));
}

constexpr const char* kLibraryName = "lib.so";
constexpr const char* kManifestName = "manifest.json";
constexpr const char* kLogName = "compile.log";
constexpr int kManifestVersion = 1;

bool is_sha256_hex(const std::string& text) {
    return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A warning line carries two hashes: their first 16 hex digits tell them apart; the sizes beside
// them make a truncation or an append obvious at a glance.
std::string hash_and_size(const std::string& hex, std::uintmax_t bytes) {
    return hex.substr(0, 16) + ", " + std::to_string(bytes) + " bytes";
}

// A unique name among concurrent pkbw processes and threads, for staging and trash directories.
std::string unique_suffix() {
    static std::atomic<int> counter{0};
    return std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.close();
    if (!out)
        throw Error("cannot write " + path.string());
}

} // namespace

CacheEntryCheck check_cache_entry(const fs::path& entry_dir) {
    using State = CacheEntryCheck::State;
    const fs::path library = entry_dir / kLibraryName;
    const fs::path manifest_path = entry_dir / kManifestName;
    std::error_code ec;
    const bool has_library = fs::is_regular_file(library, ec);
    const bool has_manifest = fs::exists(manifest_path, ec);
    auto damaged = [](std::string reason) { return CacheEntryCheck{State::Damaged, std::move(reason)}; };
    if (!has_library && !has_manifest)
        return {}; // nothing was ever published here (or only a failed compile's directory)
    // Entries from before manifests existed, and entries whose manifest was deleted, cannot be
    // verified: they are treated like a failed check, never loaded.
    if (!has_manifest)
        return damaged("cached library " + library.string() + " has no recorded SHA-256 (" +
                       manifest_path.string() + " is missing)");
    nlohmann::json manifest;
    try {
        manifest = nlohmann::json::parse(read_file(manifest_path), nullptr, false);
    } catch (const Error& error) {
        return damaged("cached library " + library.string() + ": " + error.what());
    }
    if (manifest.is_discarded() || !manifest.is_object())
        return damaged("cache manifest " + manifest_path.string() + " is not a JSON object");
    const auto version = manifest.find("version");
    if (version == manifest.end() || !version->is_number_integer() || *version != kManifestVersion)
        return damaged("cache manifest " + manifest_path.string() + ": field 'version' is not " +
                       std::to_string(kManifestVersion));
    const auto recorded = manifest.find("sha256");
    if (recorded == manifest.end() || !recorded->is_string() || !is_sha256_hex(recorded->get<std::string>()))
        return damaged("cache manifest " + manifest_path.string() +
                       ": field 'sha256' is missing or not 64 lowercase hex digits");
    const auto bytes = manifest.find("bytes");
    if (bytes == manifest.end() || !bytes->is_number_unsigned())
        return damaged("cache manifest " + manifest_path.string() +
                       ": field 'bytes' is missing or not a non-negative integer");
    // The directory name is the key: a manifest of another entry (an entry directory copied over
    // this one) is not this entry's.
    const auto key = manifest.find("key");
    if (key == manifest.end() || !key->is_string() ||
        key->get<std::string>() != entry_dir.filename().string())
        return damaged("cache manifest " + manifest_path.string() + ": field 'key' does not name its entry " +
                       entry_dir.filename().string());
    const std::string expected = recorded->get<std::string>();
    const auto expected_bytes = bytes->get<std::uintmax_t>();
    if (!has_library)
        return damaged("cached library " + library.string() + " is missing (its manifest records " +
                       hash_and_size(expected, expected_bytes) + ")");
    std::string found;
    std::uintmax_t found_bytes = fs::file_size(library, ec);
    try {
        found = sha256_file_hex(library);
    } catch (const Error& error) {
        return damaged("cached library " + library.string() + ": " + error.what());
    }
    if (found != expected)
        return damaged("cached library " + library.string() + " failed its SHA-256 check (recorded " +
                       hash_and_size(expected, expected_bytes) + "; found " +
                       hash_and_size(found, found_bytes) + ")");
    return {State::Intact, {}};
}

std::string_view backend_name(Backend backend) {
    return backend == Backend::Cuda ? "cuda" : "host";
}

std::string Diagnostic::to_string() const {
    std::string out = file + ":" + std::to_string(line);
    if (column > 0)
        out += ":" + std::to_string(column);
    return out + ": " + severity + ": " + message;
}

std::vector<Diagnostic> parse_diagnostics(std::string_view log) {
    static const std::regex gcc(R"(^(.+?):(\d+):(?:(\d+):)?\s*(fatal error|error|warning|note):\s*(.*)$)");
    static const std::regex nvcc(
        R"(^(.+?)\((\d+)\):\s*(catastrophic error|error|warning|remark)(?:\s*#[\w-]+)?:\s*(.*)$)");
    std::vector<Diagnostic> out;
    std::size_t start = 0;
    while (start < log.size() && out.size() < 1000) {
        std::size_t end = log.find('\n', start);
        if (end == std::string_view::npos)
            end = log.size();
        std::string line(log.substr(start, end - start));
        start = end + 1;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.size() > 4096)
            continue;
        std::smatch match;
        if (std::regex_match(line, match, nvcc)) {
            out.push_back({match[1], std::stoi(match[2]), 0, match[3], match[4]});
        } else if (std::regex_match(line, match, gcc)) {
            int column = match[3].matched ? std::stoi(match[3]) : 0;
            out.push_back({match[1], std::stoi(match[2]), column, match[4], match[5]});
        }
    }
    return out;
}

CompileCache::CompileCache(fs::path cache_dir, std::string nvcc, std::string cxx)
    : cache_dir_(std::move(cache_dir))
    , nvcc_(std::move(nvcc))
    , cxx_(std::move(cxx)) {
    if (nvcc_.empty()) {
        std::error_code ec;
        nvcc_ = env_or("PKBW_NVCC",
                       fs::exists("/usr/local/cuda/bin/nvcc", ec) ? "/usr/local/cuda/bin/nvcc" : "nvcc");
    }
    if (cxx_.empty())
        cxx_ = env_or("PKBW_CXX", env_or("CXX", "c++"));
}

std::string CompileCache::compiler_identity(Backend backend) {
    const std::string& program = compiler(backend);
    auto found = identities_.find(program);
    if (found != identities_.end())
        return found->second;
    ProcessResult version = run_process({program, "--version"}, compiler_environment(), 60);
    std::string identity = version.ok() ? version.output : "unavailable: " + version.output;
    identities_[program] = identity;
    return identity;
}

std::vector<std::string> CompileCache::command(const CompileRequest& request, const fs::path& output) const {
    std::vector<std::string> argv;
    if (request.backend == Backend::Cuda) {
        argv = {nvcc_,   "-std=c++17", "-O3",        "-arch=" + request.arch, "-shared", "-Xcompiler",
                "-fPIC", "-Xlinker",   "-Bsymbolic", "-DPKBW_BACKEND_CUDA"};
    } else {
        argv = {cxx_, "-std=c++20", "-O2", "-shared", "-fPIC", "-DPKBW_BACKEND_HOST"};
    }
    for (const auto& dir : request.include_dirs)
        argv.push_back("-I" + dir.string());
    argv.push_back(request.source.string());
    argv.push_back("-o");
    argv.push_back(output.string());
    if (request.backend == Backend::Cuda) {
        argv.insert(argv.end(),
                    {"-lnccl", "-lcublas", "-lcublasLt", "-lcufft"}); // cuFFT: 72's long convolution
    } else {
        argv.push_back("-pthread");
    }
    return argv;
}

std::vector<std::string> CompileCache::object_command(const CompileRequest& request,
                                                      const fs::path& output) const {
    std::vector<std::string> argv;
    for (const auto& arg : command(request, output)) {
        if (arg == "-shared" || arg == "-lnccl" || arg == "-lcublas" || arg == "-lcublasLt" ||
            arg == "-lcufft")
            continue;
        if (arg == "-Bsymbolic" && !argv.empty() && argv.back() == "-Xlinker") {
            argv.pop_back();
            continue;
        }
        argv.push_back(arg);
    }
    argv.push_back("-c");
    return argv;
}

fs::path CompileCache::object(const CompileRequest& request, const CompileResult& compiled,
                              std::string& error) {
    std::error_code ec;
    const fs::path dir = compiled.library.parent_path();
    const fs::path object = dir / "object.o";
    if (fs::is_regular_file(object, ec))
        return object;
    const fs::path temporary = dir / (".object-" + unique_suffix() + ".o");
    ProcessResult run =
        run_process(object_command(request, temporary), compiler_environment(), request.timeout_s);
    if (!run.ok() || !fs::is_regular_file(temporary, ec)) {
        fs::remove(temporary, ec);
        error = "compiling the candidate's object failed: " + run.output.substr(0, 300);
        return {};
    }
    fs::rename(temporary, object, ec);
    if (ec) {
        fs::remove(temporary, ec);
        if (!fs::is_regular_file(object, ec)) {
            error = "cannot move the candidate's object into " + object.string();
            return {};
        }
    }
    return object;
}

std::string CompileCache::cache_key(const CompileRequest& request) {
    Sha256 hash;
    hash.update(std::string_view("pkbw-compile-v1\n"));
    // The command with placeholder paths: flags matter, where the files live does not.
    CompileRequest shape = request;
    shape.source = "SOURCE";
    shape.include_dirs.assign(request.include_dirs.size(), fs::path("INCLUDE"));
    for (const auto& arg : command(shape, "OUTPUT")) {
        hash.update(std::string_view(arg));
        hash.update(std::string_view("\0", 1));
    }
    hash.update(compiler_identity(request.backend));
    for (const auto& header : request.abi_headers) {
        std::string text = read_file(header);
        // The name from the include root on (pkbw/toolkit/gemm.cuh): two headers of one name in
        // different folders stay apart.
        std::string name = header.filename().string();
        for (fs::path up = header.parent_path();
             !up.empty() && up.filename() != "include" && up != up.parent_path(); up = up.parent_path())
            name = up.filename().string() + "/" + name;
        hash.update(name + "\n" + std::to_string(text.size()) + "\n");
        hash.update(std::string_view(text));
    }
    std::string source = read_file(request.source);
    hash.update("source\n" + std::to_string(source.size()) + "\n");
    hash.update(std::string_view(source));
    return hash.final_hex();
}

void CompileCache::publish(const fs::path& staging, const fs::path& dir) {
    using State = CacheEntryCheck::State;
    std::error_code ec;
    // rename(2) moves a directory onto a missing or empty one; a non-empty one is another process's
    // entry (published while this one compiled) or the damaged entry this compile replaces.
    for (int attempt = 0; attempt < 3; ++attempt) {
        fs::rename(staging, dir, ec);
        if (!ec)
            return;
        if (check_cache_entry(dir).state == State::Intact) {
            // A concurrent compile of the same key won: its library is as good as this one.
            fs::remove_all(staging, ec);
            return;
        }
        const fs::path trash = build_dir() / (".trash-" + dir.filename().string() + "-" + unique_suffix());
        fs::rename(dir, trash, ec);
        fs::remove_all(trash, ec);
    }
    fs::rename(staging, dir, ec);
    if (ec) {
        const std::string why = ec.message();
        fs::remove_all(staging, ec);
        throw Error("cannot move the compiled library into the cache at " + dir.string() + ": " + why);
    }
}

CompileResult CompileCache::compile(const CompileRequest& request) {
    using Clock = std::chrono::steady_clock;
    using State = CacheEntryCheck::State;
    auto start = Clock::now();
    CompileResult result;
    std::error_code ec;
    if (!fs::is_regular_file(request.source, ec)) {
        result.message = "source file not found: " + request.source.string();
        return result;
    }
    result.key = cache_key(request);
    fs::path dir = build_dir() / result.key;
    result.library = dir / kLibraryName;
    result.command = command(request, result.library);
    const CacheEntryCheck check = check_cache_entry(dir);
    if (check.state == State::Intact) {
        result.ok = true;
        result.cached = true;
        std::ifstream log(dir / kLogName);
        std::ostringstream text;
        text << log.rdbuf();
        result.log = text.str();
        result.diagnostics = parse_diagnostics(result.log);
        result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return result;
    }
    // A damaged entry is never loaded: the candidate that damaged it (or a crash) must not turn into
    // a start failure of every later run, nor into a library that is not what this source builds.
    fs::create_directories(build_dir(), ec);
    if (ec)
        throw Error("cannot create the compile cache directory " + build_dir().string() + ": " +
                    ec.message());
    // The whole entry (library, log, manifest) is built in a staging directory and renamed into place
    // in one step, so that no process ever sees a library without its manifest or the reverse.
    const fs::path staging = build_dir() / (".tmp-" + result.key + "-" + unique_suffix());
    fs::create_directories(staging, ec);
    if (ec)
        throw Error("cannot create the compile cache directory " + staging.string() + ": " + ec.message());
    const fs::path temporary = staging / kLibraryName;
    ProcessResult run = run_process(command(request, temporary), compiler_environment(), request.timeout_s);
    result.log = run.output;
    result.diagnostics = parse_diagnostics(result.log);
    result.timed_out = run.timed_out;
    result.interrupted = run.interrupted;
    if (run.ok() && fs::is_regular_file(temporary, ec)) {
        try {
            write_text(staging / kLogName, result.log);
            const nlohmann::json manifest = {{"version", kManifestVersion},
                                             {"key", result.key},
                                             {"library", kLibraryName},
                                             {"sha256", sha256_file_hex(temporary)},
                                             {"bytes", fs::file_size(temporary)}};
            write_text(staging / kManifestName, manifest.dump(2) + "\n");
        } catch (...) {
            fs::remove_all(staging, ec);
            throw;
        }
        // Read-only: a candidate that opens the library for writing (O_TRUNC) fails outright. It can
        // still chmod it back (same user); the hash check catches what it then changes.
        fs::permissions(temporary,
                        fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                            fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec,
                        ec);
        fs::permissions(staging / kManifestName,
                        fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read, ec);
        publish(staging, dir);
        result.ok = true;
        if (check.state == State::Damaged)
            result.rebuilt_reason = check.reason + "; rebuilt";
        result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return result;
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    fs::remove_all(staging, ec);
    if (check.state == State::Damaged)
        result.rebuilt_reason = check.reason + "; compiling it again failed";
    if (!run.started) {
        result.message = run.output;
    } else if (run.timed_out) {
        result.message =
            "compile timed out after " + std::to_string(static_cast<int>(request.timeout_s)) + " s";
    } else if (run.interrupted) {
        result.message = "compile interrupted";
    } else {
        result.message = "compile failed";
        for (const auto& diagnostic : result.diagnostics) {
            if (diagnostic.is_error()) {
                result.message = diagnostic.to_string();
                break;
            }
        }
        if (result.message == "compile failed" && !result.log.empty()) {
            std::string first = result.log.substr(0, result.log.find('\n'));
            result.message += ": " + first.substr(0, 300);
        }
    }
    return result;
}

} // namespace pkbw::cli
