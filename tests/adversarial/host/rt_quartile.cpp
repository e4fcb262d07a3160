// Red-team candidate (perf_blocks' per-block floor with the reference's upper quartile, 26e081e,
// 2026-12-04): computes the right answer and under-reports each block's span by a chosen amount in ms
// (not a fraction, as rt_shave does), the amount the floor now allows a block that is not held strictly:
// the reference's median overhead plus min(upper quartile - median, tolerance). Its process clock
// (GOT patching, as forge_clock) reads real - offset; at the end of a call the offset grows by what that
// call shaves (never more than the call's own time, so the clock stays monotonic), so only the calls'
// spans shrink. A block is told by the gap before its first call (over RTQ_GAP_US).
// Modes (RTQ_MODE, or the file /dev/shm/rtq-knobs: "mode budget_ms launches trim_permille" overriding them):
//   0 honest (the same code, no shave: the honest counterpart);
//   1 budget: every block of the launches in RTQ_LAUNCHES shaved by RTQ_BUDGET_MS;
//   2 trim: only a block whose true span runs past its process's running median of earlier blocks
//     (times RTQ_TRIM_PERMILLE / 1000) is shaved, by that excess, at most RTQ_BUDGET_MS: the candidate's
//     own slow blocks lose their tail, which narrows the launches' intervals as well as moving them.
// Each call's true time and shave are appended to /dev/shm/rtq-L<launch>-r<rank>.log, so that a run's
// perf_result events can be rewritten to the true spans and recomputed (pkbw_bench_perf_recompute).
// Expected: pass; a verdict no better than its true spans' (the margin takes the shave off the interval).
// Measured (2-core host beside CI, problem 1, f32 256x256, --pairs 5 --iters 20 --warmup 10 --no-pkb, 3
// launches; each run's candidate samples rewritten to its true spans from the call logs and both recomputed
// with pkbw_bench_perf_recompute): budget 0.2/0.3/0.6 ms a block (12 runs) and trim up to 0.3/1.0 ms (6 runs)
// read the point up to 5% above the true spans'; the printed lower end was above the true run's in 5 of 18
// shaved runs, by 0.4-1.4% (4 of the 5 the same with the median-only floor of 26e081e^), and never above the
// true run's lower end before its own margin: KNOWN_HOLES.md "rt_quartile".
#include "pkbw/solution.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#ifndef RTQ_MODE
#define RTQ_MODE 1
#endif
#ifndef RTQ_BUDGET_MS
#define RTQ_BUDGET_MS 0.3
#endif
#ifndef RTQ_LAUNCHES
#define RTQ_LAUNCHES 0xffffffffu
#endif
#ifndef RTQ_TRIM_PERMILLE
#define RTQ_TRIM_PERMILLE 1000
#endif
#ifndef RTQ_GAP_US
#define RTQ_GAP_US 1500
#endif

namespace {
using ClockFn = int (*)(clockid_t, timespec*);
ClockFn real_clock = nullptr;
long long offset_ns = 0; // what the calls so far have shaved

int shaved_clock(clockid_t id, timespec* ts) {
    const int result = real_clock(id, ts);
    if (result != 0 || id != CLOCK_MONOTONIC || offset_ns == 0)
        return result;
    const long long now = ts->tv_sec * 1'000'000'000LL + ts->tv_nsec - offset_ns;
    ts->tv_sec = now / 1'000'000'000LL;
    ts->tv_nsec = now % 1'000'000'000LL;
    return 0;
}

long long real_now() {
    timespec ts{};
    (real_clock ? real_clock : ::clock_gettime)(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
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

struct Knobs {
    int mode = RTQ_MODE;
    double budget_ms = RTQ_BUDGET_MS;
    unsigned launches = RTQ_LAUNCHES;
    int trim_permille = RTQ_TRIM_PERMILLE;
} knobs;
int launch = 0;
bool active = false;

// This process's blocks: the current one's true time and shave so far, and the earlier ones' true spans.
long long last_exit_ns = 0;
long long block_true_ns = 0;
long long block_shaved_ns = 0;
std::vector<long long> earlier_spans;
int log_fd = -1;

__attribute__((constructor)) void arm() {
    if (FILE* f = std::fopen("/dev/shm/rtq-knobs", "r")) {
        std::fscanf(f, "%d %lf %x %d", &knobs.mode, &knobs.budget_ms, &knobs.launches, &knobs.trim_permille);
        std::fclose(f);
    }
    launch = launch_index();
    active = knobs.mode != 0 && launch >= 0 && launch < 32 && ((knobs.launches >> launch) & 1u);
    real_clock = reinterpret_cast<ClockFn>(dlsym(RTLD_DEFAULT, "clock_gettime"));
    if (real_clock && active)
        dl_iterate_phdr(patch_object, nullptr);
}

// What this call may shave: the block's budget left (mode 1), or the block's true time past the running
// median of this process's earlier blocks (mode 2), never more than the call's own time.
long long shave_for(long long call_ns) {
    if (!active)
        return 0;
    const long long budget = static_cast<long long>(knobs.budget_ms * 1e6) - block_shaved_ns;
    long long want = budget;
    if (knobs.mode == 2) {
        if (earlier_spans.size() < 2)
            return 0;
        std::vector<long long> sorted = earlier_spans;
        std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
        const long long target = sorted[sorted.size() / 2] * knobs.trim_permille / 1000;
        want = std::min(budget, block_true_ns - block_shaved_ns - target);
    }
    return std::max(0LL, std::min(want, call_ns * 9 / 10));
}

void log_call(int rank, long long begin, long long call_ns, long long shave) {
    if (log_fd < 0) {
        char path[96];
        std::snprintf(path, sizeof(path), "/dev/shm/rtq-L%d-r%d.log", launch, rank);
        log_fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    }
    char line[96];
    const int n = std::snprintf(line, sizeof(line), "%lld %lld %lld\n", begin, call_ns, shave);
    if (log_fd >= 0 && n > 0)
        (void)!::write(log_fd, line, static_cast<std::size_t>(n));
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const long long begin = real_now();
    if (begin - last_exit_ns > RTQ_GAP_US * 1000LL) { // a new block
        if (block_true_ns > 0)
            earlier_spans.push_back(block_true_ns);
        block_true_ns = 0;
        block_shaved_ns = 0;
    }
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("quartile", in.nbytes());
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
    const long long end = real_now();
    block_true_ns += end - begin;
    const long long shave = shave_for(end - begin);
    block_shaved_ns += shave;
    offset_ns += shave;
    log_call(ctx.rank, begin, end - begin, shave);
    last_exit_ns = real_now();
    return 0;
}
