#include "compile_cache.h"
#include "locate.h"
#include "pkbw/core/sha256.h"
#include "test_helpers.h"

#include <algorithm>
#include <cerrno>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <set>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace pkbw::cli;

namespace {

const char* kGoodSource = R"(#include "pkbw/solution.h"
extern "C" int pkbw_test_answer() { return 42; }
)";

CompileRequest host_request(const fs::path& source) {
    auto layout = layout_at(PKBW_TEST_SOURCE_ROOT);
    EXPECT_TRUE(layout.has_value());
    CompileRequest request;
    request.source = source;
    request.backend = Backend::Host;
    request.include_dirs = layout->include_dirs;
    request.abi_headers = layout->abi_headers;
    return request;
}

// Makes the cached library writable again, as a candidate running as the same user can.
void make_writable(const fs::path& file) {
    fs::permissions(file, fs::perms::owner_write, fs::perm_options::add);
}

std::string read_text(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// After `damage` is done to the intact entry of `source`, the next compile must not hand out the
// damaged library: it compiles again (cached false), says why in rebuilt_reason, and the rebuilt
// library loads; the compile after that is a plain hit again.
std::string rebuilt_after(const fs::path& source, const fs::path& cache_dir,
                          const std::function<void(const fs::path& library)>& damage) {
    CompileCache cache(cache_dir);
    CompileResult first = cache.compile(host_request(source));
    EXPECT_TRUE(first.ok) << first.log;
    damage(first.library);
    CompileResult second = cache.compile(host_request(source));
    EXPECT_TRUE(second.ok) << second.log;
    EXPECT_FALSE(second.cached);
    EXPECT_EQ(second.library, first.library);
    if (second.cached || !second.ok)
        return second.rebuilt_reason; // loading the damaged library would crash the test program
    void* handle = ::dlopen(second.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle, nullptr) << ::dlerror();
    if (handle) {
        auto answer = reinterpret_cast<int (*)()>(::dlsym(handle, "pkbw_test_answer"));
        EXPECT_TRUE(answer && answer() == 42);
        ::dlclose(handle);
    }
    CompileResult third = cache.compile(host_request(source));
    EXPECT_TRUE(third.cached);
    EXPECT_EQ(third.rebuilt_reason, "");
    return second.rebuilt_reason;
}

} // namespace

TEST(CompileCache, MissThenHitProducesLoadableLibrary) {
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    CompileCache cache(dir.path() / "cache");
    CompileResult first = cache.compile(host_request(source));
    ASSERT_TRUE(first.ok) << first.log;
    EXPECT_FALSE(first.cached);
    EXPECT_EQ(first.key.size(), 64u);
    EXPECT_EQ(first.library, dir.path() / "cache" / "build" / first.key / "lib.so");
    EXPECT_TRUE(fs::is_regular_file(first.library));

    CompileResult second = cache.compile(host_request(source));
    ASSERT_TRUE(second.ok);
    EXPECT_TRUE(second.cached);
    EXPECT_EQ(second.key, first.key);
    EXPECT_LT(second.seconds, first.seconds);
    EXPECT_EQ(second.rebuilt_reason, "");
    // No temporary left beside the library, nor a staging directory beside the entry.
    std::set<std::string> entries;
    for (auto& e : fs::directory_iterator(first.library.parent_path()))
        entries.insert(e.path().filename().string());
    EXPECT_EQ(entries, (std::set<std::string>{"compile.log", "lib.so", "manifest.json"}));
    int build_entries = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(dir.path() / "cache" / "build"))
        ++build_entries;
    EXPECT_EQ(build_entries, 1);

    void* handle = ::dlopen(first.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle, nullptr) << ::dlerror();
    auto answer = reinterpret_cast<int (*)()>(::dlsym(handle, "pkbw_test_answer"));
    ASSERT_NE(answer, nullptr);
    EXPECT_EQ(answer(), 42);
    ::dlclose(handle);
}

TEST(CompileCache, KeyChangesWithSourceAndArch) {
    pkbw::test::TempDir dir;
    auto a = dir.write("a.cpp", kGoodSource);
    auto b = dir.write("b.cpp", std::string(kGoodSource) + "// changed\n");
    CompileCache cache(dir.path() / "cache");
    auto ra = cache.compile(host_request(a));
    auto rb = cache.compile(host_request(b));
    ASSERT_TRUE(ra.ok && rb.ok);
    EXPECT_NE(ra.key, rb.key);
    EXPECT_FALSE(rb.cached);
    // Same content at another path is the same key: hits the cache.
    auto c = dir.write("sub/c.cpp", kGoodSource);
    auto rc = cache.compile(host_request(c));
    EXPECT_TRUE(rc.cached);
    EXPECT_EQ(rc.key, ra.key);
}

// References include the toolkit (toolkit/include/pkbw/toolkit): editing one of its headers must
// change the key, or a cached reference built against the old header would be loaded.
TEST(CompileCache, KeyChangesWithAToolkitHeader) {
    pkbw::test::TempDir dir;
    auto source = dir.write("ref.cpp", kGoodSource);
    CompileRequest request = host_request(source);
    ASSERT_TRUE(std::any_of(request.abi_headers.begin(), request.abi_headers.end(), [](const fs::path& h) {
        return h.filename() == "host.h" && h.parent_path().filename() == "toolkit";
    }));
    // The same request against a copy of the headers, then with one toolkit header changed.
    auto with_headers = [&](const std::string& toolkit_text) {
        CompileRequest copy = request;
        copy.abi_headers.clear();
        for (const auto& header : request.abi_headers) {
            const std::string name =
                header.parent_path().filename().string() + "/" + header.filename().string();
            std::string text = read_text(header);
            if (name == "toolkit/host.h")
                text = toolkit_text;
            copy.abi_headers.push_back(dir.write("include/pkbw/" + name, text));
        }
        return copy;
    };
    CompileCache cache(dir.path() / "cache");
    const std::string original = read_text(PKBW_TEST_SOURCE_ROOT "/toolkit/include/pkbw/toolkit/host.h");
    const CompileResult first = cache.compile(with_headers(original));
    ASSERT_TRUE(first.ok) << first.log;
    const CompileResult again = cache.compile(with_headers(original));
    EXPECT_TRUE(again.cached);
    EXPECT_EQ(again.key, first.key);
    const CompileResult changed = cache.compile(with_headers(original + "// changed\n"));
    ASSERT_TRUE(changed.ok) << changed.log;
    EXPECT_FALSE(changed.cached);
    EXPECT_NE(changed.key, first.key);
}

TEST(CompileCache, CompileErrorGivesDiagnosticsWithLine) {
    pkbw::test::TempDir dir;
    auto source =
        dir.write("bad.cpp", "#include \"pkbw/solution.h\"\n\nint f() {\n    return undefined_name;\n}\n");
    CompileCache cache(dir.path() / "cache");
    CompileResult result = cache.compile(host_request(source));
    EXPECT_FALSE(result.ok);
    EXPECT_FALSE(result.cached);
    ASSERT_FALSE(result.diagnostics.empty()) << result.log;
    const Diagnostic& first = result.diagnostics.front();
    EXPECT_EQ(first.file, source.string());
    EXPECT_EQ(first.line, 4);
    EXPECT_EQ(first.column, 12);
    EXPECT_EQ(first.severity, "error");
    EXPECT_NE(first.message.find("undefined_name"), std::string::npos);
    EXPECT_EQ(result.message.rfind(source.string() + ":4:12: error:", 0), 0u) << result.message;
    // Nothing cached for a failure.
    EXPECT_FALSE(fs::exists(result.library));
}

TEST(CompileCache, MissingSourceIsReported) {
    pkbw::test::TempDir dir;
    CompileCache cache(dir.path() / "cache");
    auto result = cache.compile(host_request(dir.path() / "nope.cpp"));
    EXPECT_FALSE(result.ok);
    EXPECT_NE(result.message.find("nope.cpp"), std::string::npos);
}

TEST(CompileCache, MissingCompilerIsReported) {
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    CompileCache cache(dir.path() / "cache", "nvcc", "/nonexistent/c++");
    auto result = cache.compile(host_request(source));
    EXPECT_FALSE(result.ok);
    EXPECT_NE(result.message.find("/nonexistent/c++"), std::string::npos) << result.message;
}

TEST(Diagnostics, ParsesGccAndNvccFormats) {
    std::string log = "In file included from x.cpp:1:\n"
                      "sol.cpp:12:5: error: 'foo' was not declared in this scope\n"
                      "sol.cpp:7: warning: unused\n"
                      "kernel.cu(123): error: identifier \"bar\" is undefined\n"
                      "kernel.cu(9): warning #177-D: variable \"x\" was declared but never referenced\n"
                      "kernel.cu(1): catastrophic error: cannot open source file \"missing.h\"\n"
                      "1 error detected in the compilation of \"kernel.cu\".\n";
    auto d = parse_diagnostics(log);
    ASSERT_EQ(d.size(), 5u);
    EXPECT_EQ(d[0].file, "sol.cpp");
    EXPECT_EQ(d[0].line, 12);
    EXPECT_EQ(d[0].column, 5);
    EXPECT_EQ(d[0].severity, "error");
    EXPECT_EQ(d[0].message, "'foo' was not declared in this scope");
    EXPECT_EQ(d[1].line, 7);
    EXPECT_EQ(d[1].column, 0);
    EXPECT_FALSE(d[1].is_error());
    EXPECT_EQ(d[2].file, "kernel.cu");
    EXPECT_EQ(d[2].line, 123);
    EXPECT_EQ(d[2].message, "identifier \"bar\" is undefined");
    EXPECT_EQ(d[2].to_string(), "kernel.cu:123: error: identifier \"bar\" is undefined");
    EXPECT_EQ(d[3].severity, "warning");
    EXPECT_EQ(d[3].line, 9);
    EXPECT_EQ(d[4].severity, "catastrophic error");
    EXPECT_TRUE(d[4].is_error());
}

TEST(CompileCache, CudaCommandHasTheIssueFlags) {
    CompileCache cache("/tmp/unused", "/usr/local/cuda/bin/nvcc", "c++");
    CompileRequest request;
    request.source = "cand.cu";
    request.backend = Backend::Cuda;
    request.arch = "sm_90a";
    request.include_dirs = {"/r/abi/include", "/r/core/include"};
    auto argv = cache.command(request, "out.so");
    std::string joined;
    for (auto& a : argv)
        joined += a + " ";
    EXPECT_EQ(joined,
              "/usr/local/cuda/bin/nvcc -std=c++17 -O3 -arch=sm_90a -shared -Xcompiler -fPIC -Xlinker "
              "-Bsymbolic -DPKBW_BACKEND_CUDA -I/r/abi/include -I/r/core/include cand.cu -o out.so "
              "-lnccl -lcublas -lcublasLt -lcufft ");
}

TEST(CompileCache, TruncatedLibraryIsRebuiltAndReported) {
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    std::uintmax_t original = 0;
    const std::string reason = rebuilt_after(source, dir.path() / "cache", [&](const fs::path& library) {
        original = fs::file_size(library);
        make_writable(library);
        fs::resize_file(library, original / 2);
    });
    EXPECT_NE(reason.find("failed its SHA-256 check"), std::string::npos) << reason;
    EXPECT_NE(reason.find("lib.so"), std::string::npos) << reason;
    EXPECT_NE(reason.find(std::to_string(original) + " bytes; found "), std::string::npos) << reason;
    EXPECT_NE(reason.find(", " + std::to_string(original / 2) + " bytes)"), std::string::npos) << reason;
    EXPECT_EQ(reason.substr(reason.size() - 9), "; rebuilt") << reason;
}

TEST(CompileCache, TruncatedToZeroIsRebuilt) {
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    const std::string reason = rebuilt_after(source, dir.path() / "cache", [](const fs::path& library) {
        make_writable(library);
        fs::resize_file(library, 0);
    });
    EXPECT_NE(reason.find("found e3b0c44298fc1c14, 0 bytes"), std::string::npos) << reason; // SHA-256("")
}

TEST(CompileCache, AppendedBytesAreRebuiltAndReported) {
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    const std::string reason = rebuilt_after(source, dir.path() / "cache", [](const fs::path& library) {
        make_writable(library);
        std::ofstream(library, std::ios::binary | std::ios::app) << "trailing bytes";
    });
    EXPECT_NE(reason.find("failed its SHA-256 check"), std::string::npos) << reason;
}

TEST(CompileCache, SameSizeChangeIsRebuilt) {
    // Size checks alone would miss this: one byte flipped in place.
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    const std::string reason = rebuilt_after(source, dir.path() / "cache", [](const fs::path& library) {
        make_writable(library);
        std::fstream file(library, std::ios::binary | std::ios::in | std::ios::out);
        file.seekg(100);
        char byte = 0;
        file.read(&byte, 1);
        byte = static_cast<char>(byte ^ 0x5a);
        file.seekp(100);
        file.write(&byte, 1);
    });
    EXPECT_NE(reason.find("failed its SHA-256 check"), std::string::npos) << reason;
}

TEST(CompileCache, MissingManifestIsRebuiltAndReported) {
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    const std::string reason = rebuilt_after(source, dir.path() / "cache", [](const fs::path& library) {
        ASSERT_TRUE(fs::remove(library.parent_path() / "manifest.json"));
    });
    EXPECT_NE(reason.find("has no recorded SHA-256"), std::string::npos) << reason;
    EXPECT_NE(reason.find("manifest.json is missing"), std::string::npos) << reason;
}

TEST(CompileCache, MissingLibraryWithManifestIsRebuiltAndReported) {
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    const std::string reason = rebuilt_after(
        source, dir.path() / "cache", [](const fs::path& library) { ASSERT_TRUE(fs::remove(library)); });
    EXPECT_NE(reason.find("lib.so is missing (its manifest records "), std::string::npos) << reason;
}

TEST(CompileCache, MalformedManifestNamesTheFileAndField) {
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    auto rewrite = [](const fs::path& library, const std::string& text) {
        const fs::path manifest = library.parent_path() / "manifest.json";
        make_writable(manifest);
        std::ofstream(manifest, std::ios::binary | std::ios::trunc) << text;
    };
    std::string reason = rebuilt_after(source, dir.path() / "cache",
                                       [&](const fs::path& library) { rewrite(library, "{not json"); });
    EXPECT_NE(reason.find("manifest.json is not a JSON object"), std::string::npos) << reason;
    reason = rebuilt_after(source, dir.path() / "cache", [&](const fs::path& library) {
        std::string text = read_text(library.parent_path() / "manifest.json");
        const auto at = text.find("\"sha256\"");
        ASSERT_NE(at, std::string::npos);
        text.replace(at, 8, "\"sha_256\"");
        rewrite(library, text);
    });
    EXPECT_NE(reason.find("manifest.json: field 'sha256' is missing"), std::string::npos) << reason;
}

TEST(CompileCache, ManifestOfAnotherEntryIsRejected) {
    // Copying one entry's library and manifest over another's must not pass the check.
    pkbw::test::TempDir dir;
    auto a = dir.write("a.cpp", kGoodSource);
    auto b = dir.write("b.cpp", std::string(kGoodSource) + "extern \"C\" int pkbw_other() { return 1; }\n");
    CompileCache cache(dir.path() / "cache");
    CompileResult ra = cache.compile(host_request(a));
    CompileResult rb = cache.compile(host_request(b));
    ASSERT_TRUE(ra.ok && rb.ok);
    for (const char* name : {"lib.so", "manifest.json"}) {
        const fs::path target = rb.library.parent_path() / name;
        make_writable(target);
        fs::copy_file(ra.library.parent_path() / name, target, fs::copy_options::overwrite_existing);
    }
    CompileResult again = cache.compile(host_request(b));
    ASSERT_TRUE(again.ok);
    EXPECT_FALSE(again.cached);
    EXPECT_NE(again.rebuilt_reason.find("field 'key' does not name its entry " + rb.key), std::string::npos)
        << again.rebuilt_reason;
}

TEST(CompileCache, CachedLibraryIsReadOnlyAndManifestRecordsItsHash) {
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    CompileCache cache(dir.path() / "cache");
    CompileResult result = cache.compile(host_request(source));
    ASSERT_TRUE(result.ok);
    const std::string manifest = read_text(result.library.parent_path() / "manifest.json");
    EXPECT_NE(manifest.find("\"sha256\": \"" + pkbw::sha256_file_hex(result.library) + "\""),
              std::string::npos)
        << manifest;
    EXPECT_EQ(check_cache_entry(result.library.parent_path()).state, CacheEntryCheck::State::Intact);
    // A plain open for writing (what `truncate` or a shell redirection does) is refused, unless the
    // process runs as root, which ignores permission bits.
    if (::geteuid() != 0) {
        const int fd = ::open(result.library.c_str(), O_WRONLY | O_TRUNC);
        EXPECT_EQ(fd, -1);
        EXPECT_EQ(errno, EACCES);
        if (fd >= 0)
            ::close(fd);
    }
}

TEST(CompileCache, RebuildThatFailsIsAFailureNotTheDamagedLibrary) {
    // The entry is damaged and compiling it again fails (here: a deadline too short for the
    // compiler; the deadline is not part of the key): the result is a failure, not the damaged
    // library, and the reason says the rebuild failed.
    pkbw::test::TempDir dir;
    auto source = dir.write("good.cpp", kGoodSource);
    CompileCache cache(dir.path() / "cache");
    CompileResult first = cache.compile(host_request(source));
    ASSERT_TRUE(first.ok);
    make_writable(first.library);
    fs::resize_file(first.library, 10);
    CompileRequest hurried = host_request(source);
    hurried.timeout_s = 0.001;
    CompileResult second = cache.compile(hurried);
    EXPECT_FALSE(second.ok);
    EXPECT_FALSE(second.cached);
    EXPECT_TRUE(second.timed_out);
    EXPECT_NE(second.rebuilt_reason.find("failed its SHA-256 check"), std::string::npos)
        << second.rebuilt_reason;
    EXPECT_NE(second.rebuilt_reason.find("; compiling it again failed"), std::string::npos)
        << second.rebuilt_reason;
    // With time to compile, the next run repairs the entry.
    CompileResult third = cache.compile(host_request(source));
    EXPECT_TRUE(third.ok);
    EXPECT_FALSE(third.cached);
    EXPECT_NE(third.rebuilt_reason.find("; rebuilt"), std::string::npos) << third.rebuilt_reason;
}
