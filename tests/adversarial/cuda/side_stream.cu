// Adversarial candidate: does its all-reduce (NCCL) plus ~200 us of busy work per call on a stream of its
// own (non-blocking), queuing nothing on ctx.stream() and never waiting on the host, so events on
// ctx.stream() time nothing. The engine synchronises the whole device after an eval call, so its
// outputs are right. Expected for perf: invalid_timing, "device work ran outside the measured stream".
#include "pkbw/solution.h"

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
    if (ncclAllReduce(in.data, ctx.output(0).data, static_cast<size_t>(in.numel()), pkbw::nccl_dtype(in.dtype), ncclSum,
                      ctx.nccl(), hidden) != ncclSuccess)
        return ctx.fail("ncclAllReduce failed");
    spin_for<<<1, 1, 0, hidden>>>(400000); // about 200 us at H200 clocks
    return cudaGetLastError() == cudaSuccess ? 0 : ctx.fail("launch failed");
}
