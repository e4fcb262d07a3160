// A common habit, not a cheat: the candidate launches on the legacy default stream (no stream argument)
// plus ~200 us of busy work per call. ctx.stream() is an ordinary (blocking) stream in the candidate's
// process, so its timing events wait for this work. Expected for perf: pass, no timing finding, and a
// candidate time of at least the busy work (the log line "legacy: ..." is printed once).
#include "adversarial_common.cuh"

#include <cstdio>

__global__ void spin_for(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("legacy", in.nbytes());
    cudaMemcpy(sym.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice);
    ctx.barrier();
    adversarial::sum_peers<<<132, 512>>>(sym.peers_device, ctx.world_size, ctx.output(0).data, in.numel(),
                                         in.dtype);
    spin_for<<<1, 1>>>(400000);
    static bool said = false;
    if (!said) {
        said = true;
        std::printf("legacy: kernels on the legacy default stream\n");
    }
    return cudaGetLastError() == cudaSuccess ? 0 : ctx.fail("launch failed");
}
