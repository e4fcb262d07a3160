// Adversarial candidate: does its all-reduce (NCCL) plus ~200 us of busy work per call on a stream of its
// own (non-blocking), queuing nothing on ctx.stream() and never waiting on the host, so events on
// ctx.stream() time nothing. The engine synchronises the whole device after an eval call, so its
// outputs are right. Expected for perf: invalid_timing. The launched blocks' events time little of it (the
// per-call samples disagree with the judge's clock); the graph figure's capture records nothing of the
// hidden stream (its work runs once, at the capture), so the replayed blocks leave their outputs unwritten
// and their check fails (H200, 2026-12-02: "a timed call's output failed its check in block 4 (20 of 20
// calls").
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
