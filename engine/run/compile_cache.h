// Compiles a solution (candidate or reference) into a shared library once, before any rank starts.
// Libraries are cached under <cache dir>/build/<key>/lib.so, the key being the SHA-256 of the source,
// the ABI headers, the flags and the compiler's identity, so a second run of the same source does not
// compile again. Failed compiles are not cached: their diagnostics become the run's result.
// The cache is writable by the candidates that run from it (same user), so each entry records its
// library's SHA-256 in manifest.json and a library is only handed out after its hash matched; a
// damaged entry is compiled again, and the result says why (docs/cli.md "Compile cache").
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pkbw::cli {

enum class Backend { Cuda, Host };
std::string_view backend_name(Backend backend);

struct Diagnostic {
    std::string file;
    int line = 0;
    int column = 0;       // 0 when the compiler does not give one (nvcc)
    std::string severity; // "error", "warning", "fatal error", "catastrophic error", "note"
    std::string message;
    bool is_error() const { return severity.find("error") != std::string::npos; }
    std::string to_string() const; // "file:line:col: severity: message"
};

// Parses gcc/clang (`file:12:5: error: ...`) and nvcc (`file(123): error: ...`) diagnostics.
std::vector<Diagnostic> parse_diagnostics(std::string_view log);

struct CompileRequest {
    std::filesystem::path source;
    Backend backend = Backend::Host;
    std::string arch = "sm_90"; // cuda only
    std::vector<std::filesystem::path> include_dirs;
    std::vector<std::filesystem::path> abi_headers; // hashed into the key
    double timeout_s = 300;
};

struct CompileResult {
    bool ok = false;
    bool cached = false;
    double seconds = 0; // compile time, or the lookup time on a cache hit
    std::string key;    // hex SHA-256
    std::filesystem::path library;
    std::string log; // the compiler's output
    std::vector<Diagnostic> diagnostics;
    std::vector<std::string> command;
    std::string message; // one line: the first error (or why it could not run)
    bool timed_out = false, interrupted = false;
    // Non-empty when a cache entry for this key existed but could not be trusted and was compiled
    // again instead of loaded: one line naming the library and what was wrong, e.g. "cached library
    // X failed its SHA-256 check (recorded R, N bytes; found F, M bytes); rebuilt". Worth a warning.
    std::string rebuilt_reason;
};

// The state of one cache entry directory (<cache>/build/<key>): absent (nothing to load: a plain
// miss), intact (its lib.so matches the SHA-256 in its manifest.json), or damaged (`reason` says
// how, naming the file: library changed or missing, manifest missing, unreadable or malformed).
struct CacheEntryCheck {
    enum class State { Absent, Intact, Damaged };
    State state = State::Absent;
    std::string reason;
};
CacheEntryCheck check_cache_entry(const std::filesystem::path& entry_dir);

class CompileCache {
public:
    // `nvcc` / `cxx`: compiler programs; empty picks $PKBW_NVCC, /usr/local/cuda/bin/nvcc or nvcc,
    // and $PKBW_CXX, $CXX or c++.
    explicit CompileCache(std::filesystem::path cache_dir, std::string nvcc = {}, std::string cxx = {});

    CompileResult compile(const CompileRequest& request);
    // The compiler's `--version` output, run once per compiler per process.
    std::string compiler_identity(Backend backend);
    const std::string& compiler(Backend backend) const { return backend == Backend::Cuda ? nvcc_ : cxx_; }
    // The full command line, with `output` as the library path.
    std::vector<std::string> command(const CompileRequest& request,
                                     const std::filesystem::path& output) const;
    // The candidate's own code as a relocatable object (`-c`, the library's flags less the link), kept
    // beside its library as <entry>/object.o and compiled once: what its flags are read from
    // (elf_symbols.h). `compiled`: the successful compile() of `request`. Empty with `error` set when
    // the object cannot be built.
    std::filesystem::path object(const CompileRequest& request, const CompileResult& compiled,
                                 std::string& error);
    std::vector<std::string> object_command(const CompileRequest& request,
                                            const std::filesystem::path& output) const;
    std::filesystem::path build_dir() const { return cache_dir_ / "build"; }

private:
    std::string cache_key(const CompileRequest& request);
    // Renames the finished staging directory to the entry `dir`, replacing a damaged entry there;
    // when a concurrent compile published an intact entry first, keeps that one.
    void publish(const std::filesystem::path& staging, const std::filesystem::path& dir);

    std::filesystem::path cache_dir_;
    std::string nvcc_, cxx_;
    std::map<std::string, std::string> identities_;
};

} // namespace pkbw::cli
