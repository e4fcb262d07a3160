// Adversarial candidate: does its all-reduce plus ~200 us of busy work per call on a stream of its own
// (non-blocking), queuing nothing on ctx.stream(), so events on ctx.stream() time nothing. The engine
// synchronises the whole device after an eval call, so its outputs are right. Expected for perf:
// invalid_timing, "device work ran outside the measured stream".
#include "adversarial_common.cuh"

__global__ void spin_for(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    static cudaStream_t hidden = nullptr;
    if (hidden == nullptr)
        cudaStreamCreateWithFlags(&hidden, cudaStreamNonBlocking);
    const pkbw::TensorView& in = ctx.input(0);
    const pkbw::SymmetricMemory sym = ctx.symmetric("side", in.nbytes());
    cudaMemcpyAsync(sym.local, in.data, in.nbytes(), cudaMemcpyDeviceToDevice, hidden);
    cudaStreamSynchronize(hidden);
    ctx.barrier();
    adversarial::sum_peers<<<132, 512, 0, hidden>>>(sym.peers_device, ctx.world_size, ctx.output(0).data,
                                                    in.numel(), in.dtype);
    spin_for<<<1, 1, 0, hidden>>>(400000); // about 200 us at H200 clocks
    return cudaGetLastError() == cudaSuccess ? 0 : ctx.fail("launch failed");
}
