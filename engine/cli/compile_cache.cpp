#include "compile_cache.h"

#include "pkbw/core/error.h"
#include "pkbw/core/sha256.h"
#include "subprocess.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
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
        {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "PKBW_TRACE_DIR", "PKBW_TRACE_DEFERRED"});
}

} // namespace

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
        argv.insert(argv.end(), {"-lnccl", "-lcublas", "-lcublasLt"});
    } else {
        argv.push_back("-pthread");
    }
    return argv;
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
        hash.update(header.filename().string() + "\n" + std::to_string(text.size()) + "\n");
        hash.update(std::string_view(text));
    }
    std::string source = read_file(request.source);
    hash.update("source\n" + std::to_string(source.size()) + "\n");
    hash.update(std::string_view(source));
    return hash.final_hex();
}

CompileResult CompileCache::compile(const CompileRequest& request) {
    using Clock = std::chrono::steady_clock;
    auto start = Clock::now();
    CompileResult result;
    std::error_code ec;
    if (!fs::is_regular_file(request.source, ec)) {
        result.message = "source file not found: " + request.source.string();
        return result;
    }
    result.key = cache_key(request);
    fs::path dir = build_dir() / result.key;
    result.library = dir / "lib.so";
    result.command = command(request, result.library);
    if (fs::is_regular_file(result.library, ec)) {
        result.ok = true;
        result.cached = true;
        std::ifstream log(dir / "compile.log");
        std::ostringstream text;
        text << log.rdbuf();
        result.log = text.str();
        result.diagnostics = parse_diagnostics(result.log);
        result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        return result;
    }
    fs::create_directories(dir, ec);
    if (ec)
        throw Error("cannot create the compile cache directory " + dir.string() + ": " + ec.message());
    // Concurrent pkbw processes may compile the same key: each writes its own temporary and the
    // rename makes whichever finishes last the (identical) winner.
    static std::atomic<int> counter{0};
    fs::path temporary = dir / ("lib.so.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    ProcessResult run = run_process(command(request, temporary), compiler_environment(), request.timeout_s);
    result.log = run.output;
    result.diagnostics = parse_diagnostics(result.log);
    result.timed_out = run.timed_out;
    result.interrupted = run.interrupted;
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (run.ok() && fs::is_regular_file(temporary, ec)) {
        fs::path log_temporary = dir / ("compile.log.tmp-" + std::to_string(::getpid()));
        {
            std::ofstream log(log_temporary);
            log << result.log;
        }
        fs::rename(log_temporary, dir / "compile.log", ec);
        fs::rename(temporary, result.library, ec);
        if (ec)
            throw Error("cannot move the compiled library into the cache at " + result.library.string() +
                        ": " + ec.message());
        result.ok = true;
        return result;
    }
    fs::remove(temporary, ec);
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
