#include "elf_symbols.h"
#include "pkbw/core/error.h"
#include "test_helpers.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace fs = std::filesystem;
using namespace pkbw::cli;

namespace {

bool contains(const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
}

// Builds `source` into a shared library with `compiler` (as pkbw would); empty path on failure.
fs::path build(const std::string& compiler, const fs::path& source, const fs::path& out,
               const std::string& flags) {
    const std::string root = PKBW_TEST_SOURCE_ROOT;
    const std::string command = compiler + " " + flags + " -I" + root + "/abi/include -I" + root +
                                "/core/include " + source.string() + " -o " + out.string() + " > " +
                                out.string() + ".log 2>&1";
    return std::system(command.c_str()) == 0 ? out : fs::path();
}

} // namespace

TEST(ElfSymbols, HostLibraryImportingAnNcclNameIsFound) {
    pkbw::test::TempDir dir;
    const fs::path lib =
        build("c++", fs::path(PKBW_TEST_SOURCE_ROOT) / "tests/adversarial/host/nccl_symbol.cpp",
              dir.path() / "lib.so", "-std=c++20 -O2 -shared -fPIC -DPKBW_BACKEND_HOST");
    ASSERT_FALSE(lib.empty()) << "c++ failed";
    const auto undefined = undefined_dynamic_symbols(lib);
    EXPECT_TRUE(contains(undefined, "ncclAllReduce"));
    EXPECT_FALSE(contains(undefined, "pkbw_solution")); // defined, not imported
    EXPECT_EQ(nccl_collectives(undefined), std::vector<std::string>{"ncclAllReduce"});
}

TEST(ElfSymbols, GoodSampleImportsNoCollective) {
    pkbw::test::TempDir dir;
    const fs::path lib = build("c++",
                               fs::path(PKBW_TEST_SOURCE_ROOT) /
                                   "samples/solutions_host_f32_none_samples_baseline/1_allreduce_host.cpp",
                               dir.path() / "lib.so", "-std=c++20 -O2 -shared -fPIC -DPKBW_BACKEND_HOST");
    ASSERT_FALSE(lib.empty()) << "c++ failed";
    const auto undefined = undefined_dynamic_symbols(lib);
    EXPECT_TRUE(contains(undefined, "memcpy"));
    EXPECT_TRUE(nccl_collectives(undefined).empty());
}

// CI has nvcc but no GPU: the CUDA case that calls ncclAllReduce compiles, and its import is found.
TEST(ElfSymbols, CudaCandidateCallingNcclAllReduceIsFound) {
    const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
    if (!fs::exists(nvcc) || !fs::exists("/usr/local/cuda/include/nccl.h"))
        GTEST_SKIP() << "no " << nvcc << " with NCCL";
    pkbw::test::TempDir dir;
    const fs::path lib =
        build(nvcc.string(), fs::path(PKBW_TEST_SOURCE_ROOT) / "tests/adversarial/cuda/nccl_allreduce.cu",
              dir.path() / "lib.so",
              "-std=c++17 -O3 -arch=sm_90 -shared -Xcompiler -fPIC -DPKBW_BACKEND_CUDA -lnccl");
    ASSERT_FALSE(lib.empty()) << "nvcc failed";
    EXPECT_EQ(nccl_collectives(undefined_dynamic_symbols(lib)), std::vector<std::string>{"ncclAllReduce"});
}

TEST(ElfSymbols, NotElfOrTruncatedIsAFormatErrorNamingTheFile) {
    pkbw::test::TempDir dir;
    const fs::path text =
        dir.write("text.so", "this is not an ELF file at all, but long enough to hold a header....");
    try {
        undefined_dynamic_symbols(text);
        FAIL() << "no error";
    } catch (const pkbw::FormatError& error) {
        EXPECT_NE(std::string(error.what()).find(text.string()), std::string::npos) << error.what();
    }
    // A real library cut short: its section headers are at the end, past the cut.
    const fs::path lib =
        build("c++", fs::path(PKBW_TEST_SOURCE_ROOT) / "tests/adversarial/host/nccl_symbol.cpp",
              dir.path() / "lib.so", "-std=c++20 -O2 -shared -fPIC -DPKBW_BACKEND_HOST");
    ASSERT_FALSE(lib.empty());
    fs::resize_file(lib, fs::file_size(lib) / 2);
    EXPECT_THROW(undefined_dynamic_symbols(lib), pkbw::FormatError);
    EXPECT_THROW(undefined_dynamic_symbols(dir.path() / "missing.so"), pkbw::FormatError);
}

TEST(ElfSymbols, CapabilityFlagsNameWhatTheCandidateImports) {
    const std::vector<std::string> symbols = {
        "cudaMalloc",
        "cublasGemmEx",
        "cublasLtMatmul",
        "fork",
        "execl",
        "dlopen",
        "dlsym",
        "ptrace",
        "cudaStreamCreateWithFlags",
        "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
        "memcpy"};
    const auto flags = imported_capability_flags(symbols);
    const std::vector<std::string> expected = {"calls cuBLAS (cublasGemmEx, cublasLtMatmul)",
                                               "starts processes (fork, execl)",
                                               "loads code at run time (dlopen, dlsym)",
                                               "inspects processes (ptrace)",
                                               "creates CUDA streams of its own (cudaStreamCreateWithFlags)",
                                               "starts host threads (std::thread)"};
    EXPECT_EQ(flags, expected);
    EXPECT_TRUE(imported_capability_flags({"cudaMalloc", "memcpy", "cudaLaunchKernel"}).empty());
}

TEST(ElfSymbols, ProcPathsInTheLibraryAreFlagged) {
    const auto path =
        std::filesystem::temp_directory_path() / ("pkbw-proc-flags-" + std::to_string(::getpid()));
    std::ofstream(path, std::ios::binary)
        << std::string("\x7f"
                       "ELF",
                       4)
        << std::string(100, '\0') << "/proc/self/maps" << std::string(3, '\0') << "/proc/%d/mem";
    EXPECT_EQ(proc_path_flags(path),
              (std::vector<std::string>{"reads /proc/self/maps", "reads /proc/%d/mem"}));
    std::ofstream(path, std::ios::binary) << "no such paths";
    EXPECT_TRUE(proc_path_flags(path).empty());
    std::filesystem::remove(path);
}

// The flags come from the candidate's own object (`-c`): a candidate that calls dlopen itself is
// suspect; an honest sample has no suspect flag; the problem's own collective is suspect, another info.
TEST(ElfSymbols, RelocatableObjectUndefinedSymbolsAreTheCandidatesOwn) {
    pkbw::test::TempDir dir;
    const fs::path source = dir.path() / "dl.cpp";
    std::ofstream(source) << "#include <dlfcn.h>\n#include \"pkbw/solution.h\"\n"
                             "extern \"C\" int pkbw_solution(const pkbw::Context&) {\n"
                             "    return dlopen(\"libm.so.6\", RTLD_NOW) ? 0 : 1;\n}\n";
    const fs::path object =
        build("c++", source, dir.path() / "dl.o", "-std=c++20 -O2 -fPIC -DPKBW_BACKEND_HOST -c");
    ASSERT_FALSE(object.empty()) << "c++ -c failed";
    const auto undefined = undefined_object_symbols(object);
    EXPECT_TRUE(contains(undefined, "dlopen"));
    EXPECT_FALSE(contains(undefined, "pkbw_solution"));
    const auto flags = candidate_flags(undefined, object, "ncclAllReduce");
    ASSERT_EQ(flags.size(), 1u);
    EXPECT_EQ(flags[0].severity, "suspect");
    EXPECT_EQ(flags[0].text, "loads code at run time (dlopen)");
    EXPECT_FALSE(flags[0].reason.empty());

    const fs::path honest = build("c++",
                                  fs::path(PKBW_TEST_SOURCE_ROOT) /
                                      "samples/solutions_host_f32_none_samples_baseline/1_allreduce_host.cpp",
                                  dir.path() / "honest.o", "-std=c++20 -O2 -fPIC -DPKBW_BACKEND_HOST -c");
    ASSERT_FALSE(honest.empty()) << "c++ -c failed";
    EXPECT_TRUE(candidate_flags(undefined_object_symbols(honest), honest, "ncclAllReduce").empty());

    const std::vector<std::string> nccl = {"ncclAllReduce", "ncclAllGather", "cublasGemmEx"};
    const auto mixed = candidate_flags(nccl, honest, "ncclAllReduce");
    ASSERT_EQ(mixed.size(), 3u);
    EXPECT_EQ(mixed[0].severity, "suspect");
    EXPECT_EQ(mixed[1].severity, "info");
    EXPECT_EQ(mixed[2].severity, "info"); // no GEMM marker: cuBLAS is never suspect on its own
}

// A tuned CUDA sample's object holds none of what the static CUDA runtime brings (dlopen, threads,
// /proc reads): those were the false alarms of the linked library.
TEST(ElfSymbols, CudaSampleObjectHasNoRuntimeFalseAlarms) {
    const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
    if (!fs::exists(nvcc))
        GTEST_SKIP() << "no " << nvcc << ": the CUDA sample's object cannot be built here";
    pkbw::test::TempDir dir;
    const fs::path object =
        build(nvcc.string(),
              fs::path(PKBW_TEST_SOURCE_ROOT) /
                  "samples/solutions_cuda_bf16_h200_2_samples_tuned/1_allreduce_cuda.cu",
              dir.path() / "sample.o", "-std=c++17 -O3 -arch=sm_90 -Xcompiler -fPIC -DPKBW_BACKEND_CUDA -c");
    if (object.empty())
        GTEST_SKIP() << "nvcc -c failed (see " << dir.path() << "/sample.o.log)";
    for (const auto& flag : candidate_flags(undefined_object_symbols(object), object, "ncclAllReduce")) {
        EXPECT_EQ(flag.text.find("loads code"), std::string::npos) << flag.text;
        EXPECT_EQ(flag.text.find("host threads"), std::string::npos) << flag.text;
        EXPECT_EQ(flag.text.find("/proc"), std::string::npos) << flag.text;
    }
}

// NVTX's header (which CUB and CCCL include) compiles its injection loader into the candidate: dlopen
// and dlsym referred to only from NVTX's own functions (.text.nvtx..._v3) are info, with why; the same
// candidate calling dlsym from its own code stays suspect. The user of each symbol is read from the
// object's relocations.
TEST(ElfSymbols, NvtxsInjectionLoaderIsNotTheCandidatesOwnLoading) {
    const fs::path nvtx = "/usr/local/cuda/include/nvtx3/nvToolsExt.h";
    if (!fs::exists(nvtx))
        GTEST_SKIP() << "no " << nvtx << ": NVTX's header is not on this machine";
    pkbw::test::TempDir dir;
    const std::string common =
        "#include <nvtx3/nvToolsExt.h>\n#include <dlfcn.h>\n#include \"pkbw/solution.h\"\n";
    const fs::path honest_source = dir.path() / "marks.cpp", mixed_source = dir.path() / "mixed.cpp";
    std::ofstream(honest_source) << common
                                 << "extern \"C\" int pkbw_solution(const pkbw::Context&) {\n"
                                    "    nvtxMarkA(\"step\");\n    return 0;\n}\n";
    std::ofstream(mixed_source) << common
                                << "extern \"C\" int pkbw_solution(const pkbw::Context&) {\n"
                                   "    nvtxMarkA(\"step\");\n"
                                   "    return dlsym(RTLD_DEFAULT, \"ncclAllReduce\") ? 0 : 1;\n}\n";
    const std::string flags = "-std=c++20 -O2 -fPIC -DPKBW_BACKEND_HOST -I/usr/local/cuda/include -c";
    const fs::path honest = build("c++", honest_source, dir.path() / "marks.o", flags);
    const fs::path mixed = build("c++", mixed_source, dir.path() / "mixed.o", flags);
    ASSERT_FALSE(honest.empty() || mixed.empty()) << "c++ -c failed (logs in " << dir.path() << ")";

    const auto users = undefined_symbol_users(honest);
    ASSERT_TRUE(users.count("dlopen")) << "NVTX's loader refers to dlopen";
    for (const auto& section : users.at("dlopen"))
        EXPECT_TRUE(section.starts_with(".text.nvtx")) << section;
    const auto honest_flags = object_flags(honest, "ncclAllReduce");
    ASSERT_EQ(honest_flags.size(), 1u);
    EXPECT_EQ(honest_flags[0].severity, "info");
    EXPECT_EQ(honest_flags[0].text.rfind("loads code at run time (dlopen", 0), 0u) << honest_flags[0].text;
    EXPECT_NE(honest_flags[0].reason.find("NVTX's injection loader"), std::string::npos);

    const auto mixed_flags = object_flags(mixed, "ncclAllReduce");
    EXPECT_THROW(object_flags(mixed_source, "ncclAllReduce"), pkbw::FormatError) << "not an object: unknown";
    ASSERT_EQ(mixed_flags.size(), 1u);
    EXPECT_EQ(mixed_flags[0].severity, "suspect") << mixed_flags[0].text;
    EXPECT_TRUE(undefined_symbol_users(mixed).at("dlsym").count(".text")) << "the candidate's own call";
}

namespace {

// The flags of a host candidate whose body is `source` (after the ABI's include), compiled to an object.
std::vector<Flag> flags_of(const pkbw::test::TempDir& dir, const std::string& name, const std::string& source,
                           const std::string& collective = "ncclAllReduce") {
    const fs::path file = dir.path() / (name + ".cpp");
    std::ofstream(file) << "#include \"pkbw/solution.h\"\n#include <cstddef>\n" << source;
    const fs::path object = build("c++", file, dir.path() / (name + ".o"), "-std=c++20 -O1 -fPIC -c");
    if (object.empty())
        ADD_FAILURE() << name << ": c++ -c failed (log " << dir.path() / (name + ".o.log") << ")";
    if (object.empty())
        return {};
    // A run reads the object once (object_flags); the symbol-list form must say the same.
    const std::vector<Flag> flags = object_flags(object, collective);
    const std::vector<Flag> again = candidate_flags(undefined_object_symbols(object), object, collective);
    EXPECT_EQ(flags.size(), again.size()) << name;
    for (std::size_t i = 0; i < std::min(flags.size(), again.size()); ++i)
        EXPECT_EQ(flags[i].severity + flags[i].text + flags[i].reason,
                  again[i].severity + again[i].text + again[i].reason)
            << name;
    return flags;
}

std::string described(const std::vector<Flag>& flags) {
    std::string text;
    for (const auto& f : flags)
        text += f.severity + ": " + f.text + "\n";
    return text;
}

bool has(const std::vector<Flag>& flags, const std::string& severity, const std::string& start) {
    return std::any_of(flags.begin(), flags.end(),
                       [&](const Flag& f) { return f.severity == severity && f.text.rfind(start, 0) == 0; });
}

} // namespace

// What a hostile candidate tried, each reached here without a GPU (the red team's cases): a symbol
// versioned with .symver, NCCL's pncclAllReduce alias, an all-reduce made of two collectives, C11
// threads and timers, raw syscalls (the libc wrapper and the instruction), /proc paths built at run
// time, the environment pointed at a plugin, more sections than ELF's header counts, control bytes in
// a name. Each must be flagged, none silently.
TEST(ElfSymbols, HostileSpellingsOfTheSameCallsAreFlagged) {
    pkbw::test::TempDir dir;
    const auto symver = flags_of(dir, "symver",
                                 "extern \"C\" void* my_dlsym(void*, const char*);\n"
                                 "__asm__(\".symver my_dlsym, dlsym@GLIBC_2.2.5\");\n"
                                 "extern \"C\" int pkbw_solution(const pkbw::Context&) {\n"
                                 "    return my_dlsym(nullptr, \"ncclAllReduce\") ? 0 : 1;\n}\n");
    EXPECT_TRUE(has(symver, "suspect", "loads code at run time (dlsym)")) << described(symver);

    const auto nccl =
        flags_of(dir, "pnccl",
                 "extern \"C\" int pncclAllReduce(const void*, void*, std::size_t, int, int, void*, "
                 "void*);\nextern \"C\" int ncclReduceScatter(const void*, void*, std::size_t, int, int, "
                 "void*, void*);\nextern \"C\" int ncclAllGather(const void*, void*, std::size_t, int, "
                 "void*, void*);\nextern \"C\" int pkbw_solution(const pkbw::Context& c) {\n"
                 "    if (c.rank == 7) { ncclReduceScatter(0, 0, 0, 0, 0, 0, 0); ncclAllGather(0, 0, 0, "
                 "0, 0, 0); }\n    return pncclAllReduce(0, 0, 0, 0, 0, 0, 0);\n}\n");
    EXPECT_TRUE(has(nccl, "suspect", "calls NCCL collective ncclAllReduce")) << described(nccl);
    EXPECT_TRUE(has(nccl, "suspect",
                    "calls NCCL collectives that make an all-reduce (ncclReduceScatter + "
                    "ncclAllGather)"))
        << described(nccl);

    const auto escapes =
        flags_of(dir, "escapes",
                 "#include <threads.h>\n#include <time.h>\n#include <csignal>\n#include <cstdlib>\n"
                 "#include <unistd.h>\n#include <sys/syscall.h>\n#include <cstdio>\n"
                 "static int body(void*) { return 0; }\n"
                 "extern \"C\" int pkbw_solution(const pkbw::Context& c) {\n"
                 "    if (c.rank != 9) return 0;\n    thrd_t t; thrd_create(&t, body, nullptr);\n"
                 "    timer_t timer; sigevent e{}; timer_create(CLOCK_REALTIME, &e, &timer);\n"
                 "    setenv(\"NCCL_NET_PLUGIN\", \"/tmp/p.so\", 1);\n"
                 "    char path[64]; std::snprintf(path, 64, \"/proc/%s/%s\", \"self\", \"maps\");\n"
                 "    __asm__ volatile(\"syscall\" ::: \"rcx\", \"r11\", \"memory\");\n"
                 "    return static_cast<int>(syscall(SYS_getpid)) + path[0];\n}\n");
    EXPECT_TRUE(has(escapes, "suspect", "starts host threads (thrd_create, timer_create)"))
        << described(escapes);
    EXPECT_TRUE(has(escapes, "suspect", "makes raw system calls (syscall)")) << described(escapes);
    EXPECT_TRUE(has(escapes, "suspect", "changes its environment (setenv)")) << described(escapes);
    EXPECT_TRUE(has(escapes, "suspect", "reads /proc/%s/%s")) << described(escapes);
    EXPECT_TRUE(has(escapes, "info", "may make raw system calls (")) << described(escapes);

    const auto many = flags_of(
        dir, "many_sections",
        "#include <dlfcn.h>\n"
        "__asm__(\".altmacro\\n.macro padsec n\\n.section .text.pad\\\\n,\\\"ax\\\",@progbits\\nret\\n"
        ".endm\\n.set padi,0\\n.rept 66000\\npadsec %padi\\n.set padi,padi+1\\n.endr\\n.text\\n"
        ".noaltmacro\\n\");\n"
        "extern \"C\" int pkbw_solution(const pkbw::Context&) {\n"
        "    return dlsym(RTLD_DEFAULT, \"ncclAllReduce\") ? 0 : 1;\n}\n");
    EXPECT_TRUE(has(many, "suspect", "loads code at run time (dlsym)")) << described(many);

    const auto named =
        flags_of(dir, "control_bytes",
                 "extern \"C\" __attribute__((weak)) int fake() __asm__(\"\\\"cublasX\\r\\x1b[2A\\\"\");\n"
                 "extern \"C\" int pkbw_solution(const pkbw::Context& c) {\n"
                 "    return (c.rank == 99 && fake) ? fake() : 0;\n}\n");
    ASSERT_TRUE(has(named, "info", "calls cuBLAS (")) << described(named);
    for (const auto& f : named)
        EXPECT_EQ(f.text.find_first_of("\r\x1b"), std::string::npos) << "raw control bytes in: " << f.text;
    EXPECT_NE(described(named).find("cublasX\\x0d\\x1b[2A"), std::string::npos) << described(named);
}
