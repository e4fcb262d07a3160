// Adversarial candidate: computes the right answer, and from its first call keeps the GPU busy from a
// CUDA context of its own (a thread launching 500 ms spin kernels one after another). The judge freezes
// its processes while the reference is timed, but a kernel already launched runs on, and contexts share
// the GPU by time slices, so the reference is slowed. Expected for perf: invalid_timing, the judge's probe
// kernel finds the GPU held by another process's kernels around the reference's blocks.
#include "adversarial_common.cuh"

#include <cuda.h>
#include <dlfcn.h>
#include <thread>

__global__ void hog(long long nanoseconds) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < static_cast<unsigned long long>(nanoseconds));
}

namespace {
void hog_forever(int device) {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW);
    if (!driver)
        return;
    using Create = CUresult (*)(CUcontext*, unsigned, CUdevice);
    using SetCurrent = CUresult (*)(CUcontext);
    auto create = reinterpret_cast<Create>(dlsym(driver, "cuCtxCreate_v2"));
    auto set_current = reinterpret_cast<SetCurrent>(dlsym(driver, "cuCtxSetCurrent"));
    CUcontext context = nullptr;
    if (!create || !set_current || create(&context, 0, device) != CUDA_SUCCESS)
        return;
    set_current(context);
    while (true) {
        hog<<<1, 1>>>(500'000'000LL);
        cudaDeviceSynchronize(); // of this context only: the solution's own synchronisations do not wait
    }
}
} // namespace

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static bool started = false;
    if (!started) {
        started = true;
        int device = 0;
        cudaGetDevice(&device);
        std::thread(hog_forever, device).detach();
    }
    return adversarial::all_reduce(ctx, "hog");
}
