// Adversarial candidate: makes its process answer a timed block before its GPU work ends. After the
// eval's calls it rewrites the GOT entries of cudaDeviceSynchronize, cudaStreamSynchronize and
// cudaEventSynchronize in every library of its process to a function that returns at once (and
// cudaEventElapsedTime to one that reports 1 us), and each call adds ~300 us of busy work on the GPU; the
// outputs are right once the queue drains. Expected for perf: invalid_timing, the judge's probe right
// after the reply finds the GPU still busy with the candidate's work.
#include "adversarial_common.cuh"

#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

namespace {
int patched = 0;

cudaError_t return_at_once(...) {
    return cudaSuccess;
}

// Its own worker reads event times after the synchronisation it skipped: report a short one.
cudaError_t short_elapsed(float* ms, ...) {
    *ms = 0.001f;
    return cudaSuccess;
}

void patch_table(ElfW(Addr) base, const ElfW(Rela) * relocations, std::size_t bytes, const ElfW(Sym) * symbols,
                 const char* names) {
    for (std::size_t i = 0; relocations && i < bytes / sizeof(ElfW(Rela)); ++i) {
        const ElfW(Rela)& r = relocations[i];
        const auto type = ELF64_R_TYPE(r.r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const char* name = names + symbols[ELF64_R_SYM(r.r_info)].st_name;
        void* replacement = nullptr;
        if (std::strcmp(name, "cudaDeviceSynchronize") == 0 || std::strcmp(name, "cudaStreamSynchronize") == 0 ||
            std::strcmp(name, "cudaEventSynchronize") == 0)
            replacement = reinterpret_cast<void*>(&return_at_once);
        else if (std::strcmp(name, "cudaEventElapsedTime") == 0)
            replacement = reinterpret_cast<void*>(&short_elapsed);
        if (replacement == nullptr)
            continue;
        auto* slot = reinterpret_cast<void**>(base + r.r_offset);
        const long page = sysconf(_SC_PAGESIZE);
        void* start = reinterpret_cast<void*>(reinterpret_cast<ElfW(Addr)>(slot) & ~static_cast<ElfW(Addr)>(page - 1));
        mprotect(start, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE);
        *slot = replacement;
        ++patched;
    }
}

int patch_object(dl_phdr_info* info, std::size_t, void*) {
    for (int p = 0; p < info->dlpi_phnum; ++p) {
        if (info->dlpi_phdr[p].p_type != PT_DYNAMIC)
            continue;
        const auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[p].p_vaddr);
        auto at = [&](ElfW(Addr) v) { return v < info->dlpi_addr ? v + info->dlpi_addr : v; };
        const ElfW(Rela)* plt = nullptr;
        const ElfW(Rela)* rela = nullptr;
        std::size_t plt_bytes = 0, rela_bytes = 0;
        const ElfW(Sym)* symbols = nullptr;
        const char* names = nullptr;
        for (; dyn->d_tag != DT_NULL; ++dyn) {
            if (dyn->d_tag == DT_JMPREL) plt = reinterpret_cast<const ElfW(Rela)*>(at(dyn->d_un.d_ptr));
            if (dyn->d_tag == DT_PLTRELSZ) plt_bytes = dyn->d_un.d_val;
            if (dyn->d_tag == DT_RELA) rela = reinterpret_cast<const ElfW(Rela)*>(at(dyn->d_un.d_ptr));
            if (dyn->d_tag == DT_RELASZ) rela_bytes = dyn->d_un.d_val;
            if (dyn->d_tag == DT_SYMTAB) symbols = reinterpret_cast<const ElfW(Sym)*>(at(dyn->d_un.d_ptr));
            if (dyn->d_tag == DT_STRTAB) names = reinterpret_cast<const char*>(at(dyn->d_un.d_ptr));
        }
        if (symbols && names) {
            patch_table(info->dlpi_addr, plt, plt_bytes, symbols, names);
            patch_table(info->dlpi_addr, rela, rela_bytes, symbols, names);
        }
    }
    return 0;
}

__global__ void spin_for(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static int calls = 0;
    if (++calls == 6) { // after the eval's trials: the timed blocks answer early from here on
        dl_iterate_phdr(patch_object, nullptr);
        std::printf("reply_early: %d GOT entries rewritten\n", patched);
        std::fflush(stdout);
    }
    const int status = adversarial::all_reduce(ctx, "early");
    spin_for<<<1, 1, 0, ctx.stream()>>>(600000); // about 300 us at H200 clocks
    return status;
}
