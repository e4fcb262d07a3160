// Adversarial candidate: computes the right answer, and slows its own process's clock tenfold: at load
// time it rewrites the GOT entry of clock_gettime in every library of its process (libstdc++'s
// steady_clock included), so whatever times its calls from inside the process sees a tenth of the time.
// Expected for perf: pass, with the warning that its per-call samples are not the block's, and a speedup
// near its honest one (about 5x here; 45x as its own clock says): its time is held to the judge's clock,
// which this process cannot touch (at most the reference's block overhead below it).
#include "pkbw/solution.h"

#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

namespace {
using ClockFn = int (*)(clockid_t, timespec*);
ClockFn real_clock = nullptr;
long long origin_ns = -1;

int slow_clock(clockid_t id, timespec* ts) {
    const int result = real_clock(id, ts);
    if (result != 0 || id != CLOCK_MONOTONIC)
        return result;
    const long long now = ts->tv_sec * 1'000'000'000LL + ts->tv_nsec;
    if (origin_ns < 0)
        origin_ns = now;
    const long long slowed = origin_ns + (now - origin_ns) / 10;
    ts->tv_sec = slowed / 1'000'000'000LL;
    ts->tv_nsec = slowed % 1'000'000'000LL;
    return 0;
}

void patch_table(ElfW(Addr) base, const ElfW(Rela) * relocations, std::size_t bytes, const ElfW(Sym) * symbols,
                 const char* names) {
    for (std::size_t i = 0; relocations && i < bytes / sizeof(ElfW(Rela)); ++i) {
        const ElfW(Rela)& r = relocations[i];
        const auto type = ELF64_R_TYPE(r.r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        if (std::strcmp(names + symbols[ELF64_R_SYM(r.r_info)].st_name, "clock_gettime") != 0)
            continue;
        auto* slot = reinterpret_cast<void**>(base + r.r_offset);
        const long page = sysconf(_SC_PAGESIZE);
        void* start = reinterpret_cast<void*>(reinterpret_cast<ElfW(Addr)>(slot) & ~static_cast<ElfW(Addr)>(page - 1));
        mprotect(start, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE);
        *slot = reinterpret_cast<void*>(&slow_clock);
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
        // The loader rewrites these to addresses in most objects, not in the vDSO's read-only table.
        auto at = [&](ElfW(Addr) p) { return p < info->dlpi_addr ? p + info->dlpi_addr : p; };
        for (; dyn->d_tag != DT_NULL; ++dyn) {
            switch (dyn->d_tag) {
            case DT_JMPREL: plt = reinterpret_cast<const ElfW(Rela)*>(at(dyn->d_un.d_ptr)); break;
            case DT_PLTRELSZ: plt_bytes = dyn->d_un.d_val; break;
            case DT_RELA: rela = reinterpret_cast<const ElfW(Rela)*>(at(dyn->d_un.d_ptr)); break;
            case DT_RELASZ: rela_bytes = dyn->d_un.d_val; break;
            case DT_SYMTAB: symbols = reinterpret_cast<const ElfW(Sym)*>(at(dyn->d_un.d_ptr)); break;
            case DT_STRTAB: names = reinterpret_cast<const char*>(at(dyn->d_un.d_ptr)); break;
            default: break;
            }
        }
        if (symbols && names) {
            patch_table(info->dlpi_addr, plt, plt_bytes, symbols, names);
            patch_table(info->dlpi_addr, rela, rela_bytes, symbols, names);
        }
    }
    return 0;
}

__attribute__((constructor)) void slow_down_this_process() {
    real_clock = reinterpret_cast<ClockFn>(dlsym(RTLD_DEFAULT, "clock_gettime"));
    if (real_clock)
        dl_iterate_phdr(patch_object, nullptr);
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("clock", in.nbytes());
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
