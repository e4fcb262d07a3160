// Adversarial candidate: computes the right answer, and from its first call keeps the GPU busy from a
// CUDA context of its own (one kernel spinning for 30 s). The judge freezes its processes while the
// reference is timed, but a kernel already launched runs on, and contexts share the GPU by time slices,
// so the reference is slowed. Expected for perf: invalid_timing, the judge's probe
// kernel finds the GPU held by another process's kernels around the reference's blocks.
#include "adversarial_common.cuh"

#include <cuda.h>
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
    if (!driver)
        return;
    using Create = CUresult (*)(CUcontext*, unsigned, CUdevice);
    using Pop = CUresult (*)(CUcontext*);
    auto create = reinterpret_cast<Create>(dlsym(driver, "cuCtxCreate_v2"));
    auto pop = reinterpret_cast<Pop>(dlsym(driver, "cuCtxPopCurrent_v2"));
    CUcontext context = nullptr, previous = nullptr;
    if (!create || !pop || create(&context, 0, device) != CUDA_SUCCESS) // made current on this thread
        return;
    spin_kernel<<<1, 1>>>(30'000'000'000LL);
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
