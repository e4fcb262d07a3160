// Adversarial candidate: computes the right answer, and from its first call keeps the GPU busy from a
// CUDA context of its own (one kernel spinning for 30 s), hoping to slow the reference: the judge freezes
// its processes while the reference is timed, but a kernel already launched runs on. Seen on the H200
// (2026-12-02), in two runs: once the judge's kernels were not delayed at all (probes 23 us, the
// reference's blocks 3.2 ms as without it; only the candidate's own blocks slowed, 431 ms instead of 8,
// its two contexts sharing the GPU by time slices), once the judge's probe after a candidate block took
// 1330 us. Expected for perf: pass when the GPU kept the judge's kernels apart, else invalid_timing naming
// the probe; never a pass with a slowed reference. Expected for perf: invalid_timing, the judge's probe
// kernel finds the GPU held by another process's kernels around the reference's blocks.
#include "adversarial_common.cuh"

#include <cuda.h>
#include <cstdio>
#include <dlfcn.h>

__global__ void spin_kernel(long long nanoseconds) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < static_cast<unsigned long long>(nanoseconds));
}

namespace {
// A context of its own, made on the first call, with a kernel that spins for 30 s: the process is frozen
// while the reference is timed, the kernel is not. cudaDeviceSynchronize on the solution's context does
// not wait for another context's work.
void start_hog(int device) {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (!driver) {
        std::printf("gpu_hog_context: no libcuda.so.1: %s\n", dlerror());
        return;
    }
    using Create = CUresult (*)(CUcontext*, unsigned, CUdevice);
    using Pop = CUresult (*)(CUcontext*);
    auto create = reinterpret_cast<Create>(dlsym(driver, "cuCtxCreate_v2"));
    auto pop = reinterpret_cast<Pop>(dlsym(driver, "cuCtxPopCurrent_v2"));
    CUcontext context = nullptr, previous = nullptr;
    const CUresult made = create && pop ? create(&context, 0, device) : CUDA_ERROR_NOT_FOUND;
    if (made != CUDA_SUCCESS) { // made current on this thread
        std::printf("gpu_hog_context: cuCtxCreate failed (%d)\n", static_cast<int>(made));
        return;
    }
    spin_kernel<<<1, 1>>>(30'000'000'000LL);
    std::printf("gpu_hog_context: a 30 s kernel launched in a context of its own: %s\n",
                cudaGetErrorString(cudaGetLastError()));
    std::fflush(stdout);
    pop(&previous); // back to the solution's context
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool started = false;
    if (!started) {
        started = true;
        int device = 0;
        cudaGetDevice(&device);
        start_hog(device);
    }
    return adversarial::all_reduce(ctx, "hog");
}
