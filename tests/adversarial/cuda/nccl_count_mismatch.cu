// Adversarial candidate (cuda): ranks disagree on the element count of one ncclAllReduce (rank 1 asks
// for half). NCCL cannot detect this: rank 0 waits for data that never comes. Expected: timeout in
// phase candidate (rank 0, or both), every rank killed, the GPU free afterwards.
#include "adversarial_common.cuh"

extern "C" int pkbw_solution(const pkbw::Context& ctx) {
    const pkbw::TensorView& in = ctx.input(0);
    const std::size_t count = static_cast<std::size_t>(in.numel()) / (ctx.rank == 1 ? 2 : 1);
    const ncclResult_t r =
        ncclAllReduce(in.data, ctx.output(0).data, count, ncclBfloat16, ncclSum, ctx.nccl(), ctx.stream());
    return r == ncclSuccess ? 0 : ctx.fail(ncclGetErrorString(r));
}
