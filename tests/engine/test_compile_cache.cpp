#include "compile_cache.h"
#include "locate.h"
#include "test_helpers.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

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
    // No temporary left beside the library.
    int entries = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(first.library.parent_path()))
        ++entries;
    EXPECT_EQ(entries, 2); // lib.so, compile.log

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
    request.include_dirs = {"/r/engine/include", "/r/core/include"};
    auto argv = cache.command(request, "out.so");
    std::string joined;
    for (auto& a : argv)
        joined += a + " ";
    EXPECT_EQ(joined,
              "/usr/local/cuda/bin/nvcc -std=c++17 -O3 -arch=sm_90a -shared -Xcompiler -fPIC -Xlinker "
              "-Bsymbolic -DPKBW_BACKEND_CUDA -I/r/engine/include -I/r/core/include cand.cu -o out.so "
              "-lnccl -lcublas -lcublasLt ");
}
