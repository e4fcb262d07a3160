// Red-team candidate (perf_blocks' level test and margin, 2026-12-03): computes the right answer and
// under-reports its block spans by a fraction, small enough that the level test is not raised, so
// that its blocks keep the floor at the reference's MEDIAN overhead (not its least) and the margin is
// the excesses above 0 averaged over the launches. Its process clock runs at RT_SHAVE_PERMILLE / 1000
// of the real one (GOT patching, as forge_clock), only in the launches whose bit is set in
// RT_SHAVE_LAUNCHES (the launch read from an ancestor's argv, config_launchN.json: KNOWN_HOLES.md
// launch_aware); elsewhere it may run its clock fast by RT_OVER_PERMILLE (over-reporting, to bring the
// mean excess down). Expected: pass, a speedup and an interval no better than the honest sample's
// beyond the margin the run reports (the judge's clock holds it).
// Measured (2-core host beside CI, problem 1, 256x256, --iters 20 --warmup 10 --no-pkb; each run compared
// with the same run's blocks recomputed from its true spans, pkbw_bench_perf_recompute): shaved in every
// launch (0.9, 0.8: 6 runs) the level test raised it and the least-overhead floor held it to its true
// time (forged 5.84-8.68x, true 5.97-8.32x; intervals' lower ends no higher); shaved 0.7 in launch 0 only
// (3 runs) a quiet launch let 0.88 of its true time through and the point speedup read 10.31x where its
// true spans give 9.85x, but the lower end fell (6.88 against 7.87): no verdict gained.
#include "pkbw/solution.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

#ifndef RT_SHAVE_PERMILLE
#define RT_SHAVE_PERMILLE 800
#endif
#ifndef RT_SHAVE_LAUNCHES
#define RT_SHAVE_LAUNCHES 0xffffffffu
#endif
#ifndef RT_OVER_PERMILLE
#define RT_OVER_PERMILLE 1000
#endif

namespace {
using ClockFn = int (*)(clockid_t, timespec*);
ClockFn real_clock = nullptr;
long long origin_ns = -1;
long long rate_permille = 1000;

int shaved_clock(clockid_t id, timespec* ts) {
    const int result = real_clock(id, ts);
    if (result != 0 || id != CLOCK_MONOTONIC)
        return result;
    const long long now = ts->tv_sec * 1'000'000'000LL + ts->tv_nsec;
    if (origin_ns < 0)
        origin_ns = now;
    const long long shaved = origin_ns + (now - origin_ns) / 1000 * rate_permille;
    ts->tv_sec = shaved / 1'000'000'000LL;
    ts->tv_nsec = shaved % 1'000'000'000LL;
    return 0;
}

void patch_table(ElfW(Addr) base, const ElfW(Rela) * relocations, std::size_t bytes,
                 const ElfW(Sym) * symbols, const char* names) {
    for (std::size_t i = 0; relocations && i < bytes / sizeof(ElfW(Rela)); ++i) {
        const ElfW(Rela)& r = relocations[i];
        const auto type = ELF64_R_TYPE(r.r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        if (std::strcmp(names + symbols[ELF64_R_SYM(r.r_info)].st_name, "clock_gettime") != 0)
            continue;
        auto* slot = reinterpret_cast<void**>(base + r.r_offset);
        const long page = sysconf(_SC_PAGESIZE);
        void* start =
            reinterpret_cast<void*>(reinterpret_cast<ElfW(Addr)>(slot) & ~static_cast<ElfW(Addr)>(page - 1));
        mprotect(start, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE);
        *slot = reinterpret_cast<void*>(&shaved_clock);
    }
}

int patch_object(dl_phdr_info* info, std::size_t, void*) {
    for (int p = 0; p < info->dlpi_phnum; ++p) {
        if (info->dlpi_phdr[p].p_type != PT_DYNAMIC)
            continue;
        const auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
        const ElfW(Rela)* plt = nullptr;
        const ElfW(Rela)* rela = nullptr;
        std::size_t plt_bytes = 0, rela_bytes = 0;
        const ElfW(Sym)* symbols = nullptr;
        const char* names = nullptr;
        auto at = [&](ElfW(Addr) p) { return p < info->dlpi_addr ? p + info->dlpi_addr : p; };
        for (; dyn->d_tag != DT_NULL; ++dyn) {
            switch (dyn->d_tag) {
            case DT_JMPREL:
                plt = reinterpret_cast<const ElfW(Rela)*>(at(dyn->d_un.d_ptr));
                break;
            case DT_PLTRELSZ:
                plt_bytes = dyn->d_un.d_val;
                break;
            case DT_RELA:
                rela = reinterpret_cast<const ElfW(Rela)*>(at(dyn->d_un.d_ptr));
                break;
            case DT_RELASZ:
                rela_bytes = dyn->d_un.d_val;
                break;
            case DT_SYMTAB:
                symbols = reinterpret_cast<const ElfW(Sym)*>(at(dyn->d_un.d_ptr));
                break;
            case DT_STRTAB:
                names = reinterpret_cast<const char*>(at(dyn->d_un.d_ptr));
                break;
            default:
                break;
            }
        }
        if (symbols && names) {
            patch_table(info->dlpi_addr, plt, plt_bytes, symbols, names);
            patch_table(info->dlpi_addr, rela, rela_bytes, symbols, names);
        }
    }
    return 0;
}

// The launch index from the first ancestor whose argv names config_launchN.json; 0 if none (the first
// launch runs from the run's own config; the later ones from config_launchN.json).
int launch_index() {
    pid_t pid = getppid();
    for (int depth = 0; depth < 8 && pid > 1; ++depth) {
        char path[64];
        std::snprintf(path, sizeof(path), "/proc/%d/cmdline", static_cast<int>(pid));
        if (FILE* f = std::fopen(path, "r")) {
            std::string args;
            char buffer[4096];
            std::size_t n = 0;
            while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
                args.append(buffer, n);
            std::fclose(f);
            const std::size_t at = args.find("config_launch");
            if (at != std::string::npos)
                return std::atoi(args.c_str() + at + std::strlen("config_launch"));
        }
        std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
        FILE* f = std::fopen(path, "r");
        if (!f)
            break;
        char stat[1024] = {};
        std::fread(stat, 1, sizeof(stat) - 1, f);
        std::fclose(f);
        const char* close = std::strrchr(stat, ')');
        int parent = 0;
        if (!close || std::sscanf(close + 2, "%*c %d", &parent) != 1)
            break;
        pid = parent;
    }
    return 0;
}

__attribute__((constructor)) void shave_this_process() {
    const int launch = launch_index();
    const bool shave = launch >= 0 && launch < 32 && ((RT_SHAVE_LAUNCHES >> launch) & 1u);
    rate_permille = shave ? RT_SHAVE_PERMILLE : RT_OVER_PERMILLE;
    real_clock = reinterpret_cast<ClockFn>(dlsym(RTLD_DEFAULT, "clock_gettime"));
    if (real_clock && rate_permille != 1000)
        dl_iterate_phdr(patch_object, nullptr);
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("shave", in.nbytes());
    std::memcpy(sym.local, in.data, in.nbytes());
    ctx.barrier();
    float* out = ctx.output(0).as<float>();
    for (std::int64_t i = 0; i < in.numel(); ++i) {
        float sum = 0.f;
        for (int r = 0; r < ctx.world_size; ++r)
            sum += static_cast<const float*>(sym.peers[r])[i];
        out[i] = sum;
    }
    ctx.barrier();
    return 0;
}
